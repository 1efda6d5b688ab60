/**
 * A dev stack with something to look at on the dashboard: three pools (one of
 * them a scale set whose rename GitHub refused), busy and
 * idle runners, a job no pool can take, a leaked machine, sweep runs (one that
 * took out of its pool a job whose webhooks were lost), a machine
 * that died and the liveness pass that found it, and a redelivered webhook. The
 * screenshots script stages it; anyone can use it to try the dashboard.
 */
import type { FakeProviderControl } from '../providers/fake';
import { FakeProviderControl as Control } from '../providers/fake';
import { forceDeleteSignal, runnerWorkflowId } from '../workflows/messages';
import { poolStateQuery, poolWorkflowId } from '../workflows/pool-messages';
import { scaleSetListenerId, scaleSetStateQuery } from '../workflows/scale-set-messages';
import { apiRequest, SIMULATED_PROVIDER, startDevStack, type DevStack } from './stack';

export interface DashboardScene {
  stack: DevStack;
  machines: FakeProviderControl;
  /** A runner that is running a long job. */
  busyRunner: string;
  stop(): Promise<void>;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const pool = (name: string, repo: string, extra: Record<string, unknown>) => ({
  name,
  github: { credentials: 'default', scope: { kind: 'repo', owner: 'acme', repo } },
  labels: ['self-hosted', 'linux', repo],
  provider: SIMULATED_PROVIDER,
  image: 'ubuntu-24.04',
  flavor: 'small',
  bootstrapTimeout: 30_000,
  idleTimeout: 600_000,
  ...extra,
});

export async function stageDashboardScene(temporalAddress: string, log: (line: string) => void = () => undefined): Promise<DashboardScene> {
  const stack = await startDevStack({
    temporalAddress,
    taskQueue: `dashboard-scene-${Date.now()}`,
    machines: 'simulated',
    config: {
      sweep: { enabled: true, interval: '15s', gracePeriod: '5s', lostJobAge: '5s' },
      liveness: { enabled: true, interval: '5s', githubInterval: '10s', jitter: '1s' },
      // The scene has a server of its own, so the token credentials' redelivery schedule may run.
      redelivery: { enabled: true, interval: '5s', hookRefresh: '5s', firstDelay: '1s', maxDelay: '5s' },
      timings: { forceDeleteAttemptTimeout: 300 },
    },
    simulator: { onError: () => undefined, webhookConcurrency: 4 },
  });
  const machines = new Control(stack.machinesDir!);
  log(`stack up: ${stack.api.url}/ui`);
  const ok = (res: { status: number; body: unknown }) => {
    if (res.status >= 300) throw new Error(`API answered ${res.status}: ${JSON.stringify(res.body)}`);
  };
  ok(await apiRequest(stack, 'POST', '/api/v1/pools', pool('linux-x64', 'widgets', { minIdleRunners: 1, maxRunners: 6 })));
  ok(await apiRequest(stack, 'POST', '/api/v1/pools', pool('gpu-a100', 'models', { minIdleRunners: 0, maxRunners: 2, flavor: 'gpu', enabled: false })));

  for (let i = 0; i < 3; i++) stack.sim.queueJob({ repository: 'acme/widgets', labels: ['self-hosted', 'linux', 'widgets'], durationMs: 3_600_000, name: `build ${i + 1}` });
  stack.sim.queueJob({ repository: 'acme/website', labels: ['self-hosted', 'macos', 'arm64'], name: 'ios' });

  const busyRunner = await until('a busy runner', async () => {
    const view = await stack.client.workflow.getHandle(poolWorkflowId('linux-x64')).query(poolStateQuery);
    const busy = view.runners.filter((r) => r.runnerStatus === 'active');
    const idle = view.runners.filter((r) => r.runnerStatus === 'idle');
    return busy.length >= 3 && idle.length >= 1 ? busy[0]!.name : undefined;
  });
  log('runners busy');
  // A job whose start and end webhooks are both lost: the pool keeps it queued, and a runner idle
  // for it, until a sweep looks it up at GitHub and takes it out.
  stack.sim.setFault({ kind: 'lose-webhooks', action: 'in_progress', restOfJob: true, times: 1 });
  stack.sim.queueJob({ repository: 'acme/widgets', labels: ['self-hosted', 'linux', 'widgets'], durationMs: 500, name: 'lint' });

  // A machine the provider refuses to delete: a forced delete leaves it leaked for the sweep.
  const leakedName = await until('a second busy runner', async () => {
    const view = await stack.client.workflow.getHandle(poolWorkflowId('linux-x64')).query(poolStateQuery);
    return view.runners.find((r) => r.runnerStatus === 'active' && r.name !== busyRunner)?.name;
  });
  machines.setFault('delete', { failForever: true, instance: leakedName, message: 'cloud API unavailable' });
  await stack.client.workflow.getHandle(runnerWorkflowId(leakedName)).signal(forceDeleteSignal, { reason: 'stuck machine' });
  await until('the leak to be visible', async () => {
    const res = await apiRequest(stack, 'GET', '/api/v1/runners?leaked=true');
    return (res.body as { runners: unknown[] }).runners.length > 0 ? true : undefined;
  });
  log('leaked machine recorded');
  // The sweep finds the leaked machine and, while the provider still refuses, reports it failed.
  await until('a sweep run that met the leaked machine', async () => {
    const res = await apiRequest(stack, 'GET', '/api/v1/sweeps');
    const sweeps = (res.body as { sweeps: { runs: { result?: { failed: number } }[] }[] }).sweeps;
    return sweeps.some((s) => s.runs.some((r) => (r.result?.failed ?? 0) > 0)) ? true : undefined;
  }, 90_000);
  log('sweep run recorded');
  await until('a sweep run that took a job GitHub had run out of its pool', async () => {
    const res = await apiRequest(stack, 'GET', '/api/v1/sweeps');
    const sweeps = (res.body as { sweeps: { runs: { result?: { github?: { jobsDequeued: number } } }[] }[] }).sweeps;
    return sweeps.some((s) => s.runs.some((r) => (r.result?.github?.jobsDequeued ?? 0) > 0)) ? true : undefined;
  }, 90_000);
  log('settled job taken out');
  // A delivery that found runnerflow out of reach, asked for again by the redelivery schedule.
  stack.sim.setFault({ kind: 'unreachable-webhooks', action: 'queued', times: 1 });
  stack.sim.queueJob({ repository: 'acme/models', labels: ['self-hosted', 'linux', 'models'], name: 'train' });
  await until('a redelivery pass that asked for a failed delivery again', async () => {
    const res = await apiRequest(stack, 'GET', '/api/v1/redeliveries');
    const redeliveries = (res.body as { redeliveries: { runs: { result?: { redelivered: number } }[] }[] }).redeliveries;
    return redeliveries.some((r) => r.runs.some((run) => (run.result?.redelivered ?? 0) > 0)) ? true : undefined;
  }, 60_000);
  log('redelivery recorded');
  // An idle runner's machine dies behind runnerflow's back: a liveness pass finds it, and the pool replaces it.
  const idleRunner = (await stack.client.workflow.getHandle(poolWorkflowId('linux-x64')).query(poolStateQuery)).runners.find((r) => r.runnerStatus === 'idle');
  if (idleRunner) stack.simulatedMachines?.killMachine(idleRunner.name, { leaves: 'gone' });
  await until('a liveness pass that found a machine gone', async () => {
    const res = await apiRequest(stack, 'GET', '/api/v1/liveness');
    const checks = (res.body as { liveness: { runs: { result?: { counts: { findings: number } } }[] }[] }).liveness;
    return checks.some((c) => c.runs.some((run) => (run.result?.counts.findings ?? 0) > 0)) ? true : undefined;
  }, 60_000);
  log('liveness finding recorded');
  // A scale-set pool renamed to a name another scale set has in its group: GitHub refuses the
  // rename, and the pool keeps its jobs running under the old name and says why.
  const large = {
    ...pool('linux-large', 'widgets', { mode: 'scaleSet', scaleSet: { minRunners: 0 }, maxRunners: 4, flavor: 'large' }),
    github: { credentials: 'default', scope: { kind: 'org', org: 'acme' } },
    labels: ['self-hosted', 'linux'],
  };
  ok(await apiRequest(stack, 'POST', '/api/v1/pools', large));
  const listener = stack.client.workflow.getHandle(scaleSetListenerId('linux-large'));
  await until('the scale set listening', async () => ((await listener.query(scaleSetStateQuery).catch(() => undefined))?.status === 'listening' ? true : undefined));
  stack.sim.addScaleSet({ kind: 'org', org: 'acme' }, 'linux-xl', ['linux-xl']);
  ok(await apiRequest(stack, 'PUT', '/api/v1/pools/linux-large', { ...large, scaleSet: { minRunners: 0, name: 'linux-xl' } }));
  await until('the rename refused', async () => (/not renamed/.test((await listener.query(scaleSetStateQuery)).lastError ?? '') ? true : undefined));
  log('scale set rename refused');

  return {
    stack,
    machines,
    busyRunner,
    async stop() {
      await stack.stop();
    },
  };
}
