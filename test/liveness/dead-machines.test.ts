/**
 * The whole stack with the liveness schedules on: machines die behind runnerflow's
 * back and the pools heal. Short configured intervals; the same code paths as production.
 */
import { describe, expect, it } from 'vitest';
import { runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import type { runnerInstance } from '../../workflows/runner-instance';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import type { ProviderLiveness } from '../../api/dashboard/liveness-runs';
import { scrape, sampleSum } from '../support/prometheus-text';
import { eventually, uniqueName } from '../support/temporal';
import { api, e2ePool, useE2EStack } from '../e2e/stack';

const PROVIDER = uniqueName('simulated');
const INTERVAL_MS = 2_000;
const JITTER_MS = 500;
const BUSY_GRACE_MS = 3_000;

const stack = useE2EStack(
  { jobDurationMs: 300 },
  {
    simulatedProvider: PROVIDER,
    config: {
      liveness: { enabled: true, interval: INTERVAL_MS, githubInterval: INTERVAL_MS, jitter: JITTER_MS },
      timings: { busyRunnerLostGrace: BUSY_GRACE_MS, runnerOfflineGrace: 1_000, busyRetryInterval: 500, deleteInitialInterval: 200, githubInitialInterval: 200, poolCreateBackoffInitial: 500, poolCreateBackoffMax: 1_000 },
    },
  },
);

async function idleRunnerOf(pool: string, except: string[] = []): Promise<string> {
  // The pool hears only phase changes (idle, busy, leaving), so ask the instance whether its machine is up.
  return eventually(async () => {
    const v = await stack.client.workflow.getHandle(poolWorkflowId(pool)).query(poolStateQuery);
    for (const r of v.runners.filter((x) => x.runnerStatus === 'idle' && !except.includes(x.name))) {
      const state = await stack.client.workflow.getHandle(runnerWorkflowId(r.name)).query(stateQuery);
      if (state.status === 'running') return r.name;
    }
    return undefined;
  }, 30_000, `an idle runner in ${pool}`);
}

function leavingTransition(final: Awaited<ReturnType<typeof runnerResult>>) {
  return final.transitions.find((t) => t.to === 'pending_delete');
}

async function runnerResult(name: string) {
  return stack.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(name)).result();
}

describe('dead machines', () => {
  it('an idle runner whose machine is killed is replaced within the liveness interval', async () => {
    const pool = e2ePool('idle-kill', { provider: PROVIDER, minIdleRunners: 1, maxRunners: 1 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const victim = await idleRunnerOf(pool.name);

    const killedAt = Date.now();
    stack.simulatedMachines!.killMachine(victim, { leaves: 'gone' });
    const final = await runnerResult(victim);
    const leaving = leavingTransition(final);
    expect(leaving?.reason).toMatch(/^machine gone/);
    // One pass: the schedule's interval plus its jitter, plus the few seconds a loaded test machine may add.
    expect(Date.parse(leaving!.at) - killedAt).toBeLessThan(INTERVAL_MS + JITTER_MS + 8_000);
    expect(final).toMatchObject({ status: 'deleted', forced: false });

    // Operators see the finding in the machine check's last passes, and alert on it from the metrics.
    const res = await api(stack, 'GET', '/api/v1/liveness?runs=20');
    expect(res.status).toBe(200);
    const checks = (res.body as { liveness: ProviderLiveness[] }).liveness.filter((l) => l.provider === PROVIDER);
    expect(checks.map((l) => [l.check, l.scheduleId, l.scheduled, l.intervalMs])).toEqual([
      ['machines', livenessScheduleId(PROVIDER, 'machines'), true, INTERVAL_MS],
      ['github', livenessScheduleId(PROVIDER, 'github'), true, INTERVAL_MS],
    ]);
    const found = checks[0]!.runs.find((r) => r.result?.findings.some((f) => f.name === victim));
    expect(found?.result).toMatchObject({ findings: [{ name: victim, finding: 'machine_gone' }], orphaned: [], uncounted: [], failures: [] });
    const families = await scrape(`${stack.api.url}/metrics`);
    expect(sampleSum(families.get('runnerflow_liveness_findings_total'), { provider: PROVIDER, check: 'machines', finding: 'machine_gone' })).toBeGreaterThanOrEqual(1);
    expect(sampleSum(families.get('runnerflow_liveness_last_run_timestamp_seconds'), { provider: PROVIDER, check: 'machines' })).toBeGreaterThan(Date.now() / 1000 - 60);

    const replacement = await idleRunnerOf(pool.name, [victim]);
    expect(replacement).not.toBe(victim);
    const job = stack.sim.queueJob({ repository: 'acme/idle-kill', labels: ['self-hosted', 'linux', 'idle-kill'] });
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, 'a job on the replacement');
  });

  it('a busy runner whose machine dies is cleaned up after the grace period and the pool takes the next job', async () => {
    const pool = e2ePool('busy-kill', { provider: PROVIDER, minIdleRunners: 0, maxRunners: 1 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const labels = ['self-hosted', 'linux', 'busy-kill'];
    const first = stack.sim.queueJob({ repository: 'acme/busy-kill', labels, durationMs: 120_000 });
    const running = await eventually(() => stack.sim.jobs().find((j) => j.id === first.id && j.status === 'in_progress'), 30_000, 'the first job to start');
    const victim = running.runnerName!;
    await eventually(async () => (await stack.client.workflow.getHandle(runnerWorkflowId(victim)).query(stateQuery)).runnerStatus === 'active', 10_000, 'the runner to be busy');

    // GitHub gives the lost job up only much later; the next job is queued behind the full pool.
    const killedAt = Date.now();
    stack.simulatedMachines!.killMachine(victim, { leaves: 'stopped', failJobAfterMs: 60_000 });
    const second = stack.sim.queueJob({ repository: 'acme/busy-kill', labels });

    const final = await runnerResult(victim);
    const leaving = leavingTransition(final);
    expect(leaving?.reason).toMatch(new RegExp(`^machine stopped while running job ${first.id}; still so after the 3 s grace period$`));
    expect(Date.parse(leaving!.at) - killedAt).toBeGreaterThanOrEqual(BUSY_GRACE_MS);
    expect(final).toMatchObject({ status: 'deleted', forced: false, leaked: false });
    expect(stack.machines.instance(victim)).toBeUndefined();

    const done = await eventually(() => stack.sim.jobs().find((j) => j.id === second.id && j.status === 'completed'), 45_000, 'the second job to run');
    expect(done.conclusion).toBe('success');
    expect(done.runnerName).not.toBe(victim);
    // The lost job is still the dead runner's at GitHub: busy, so nothing removed it.
    expect(stack.sim.runners().find((r) => r.name === victim)).toMatchObject({ status: 'offline', busy: true });
  });

  it('a runner whose agent died while the provider still says "running" is caught by the GitHub pass', async () => {
    const pool = e2ePool('liar', { provider: PROVIDER, minIdleRunners: 1, maxRunners: 1 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const victim = await idleRunnerOf(pool.name);
    const agent = stack.sim.agents().find((a) => a.runnerName === victim && a.state !== 'done');
    expect(agent).toBeDefined();
    stack.sim.crashAgent(agent!.id);
    expect(stack.machines.instance(victim)?.status).toBe('running');

    const final = await runnerResult(victim);
    expect(leavingTransition(final)?.reason).toMatch(/^runner offline \(repo:acme\/liar\); still so after the 1 s grace period$/);
    await idleRunnerOf(pool.name, [victim]);
  });

  it('the schedules exist per provider, one for machines and one for GitHub', async () => {
    for (const check of ['machines', 'github'] as const) {
      const desc = await stack.client.schedule.getHandle(livenessScheduleId(PROVIDER, check)).describe();
      expect(desc.spec.intervals?.map((i) => i.every)).toEqual([INTERVAL_MS]);
      expect(desc.action).toMatchObject({ workflowType: 'livenessCheck', args: [{ provider: PROVIDER, check }] });
    }
  });
});
