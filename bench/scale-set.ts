/**
 * Scale-set mode next to webhook mode: queue-to-start and GitHub calls per job.
 *
 * The same K jobs run through the full stack twice: once for a webhook pool
 * (workflow_job webhooks, REST JIT configs) and once for a scale-set pool (the
 * listener long-polls the Actions service, acquires jobs, and runners get their
 * JIT config from the scale set). Queue-to-start is the simulator's own clock:
 * from the job being queued to a runner taking it. Calls are every request the
 * simulator answered from queueing the jobs until the pool was deleted (REST
 * and Actions service); long polls are counted, and shown on their own.
 *
 *   npx tsx bench/scale-set.ts [--jobs 50] [--max-runners 10]
 */
import { SIMULATED_PROVIDER } from '../devstack/stack';
import type { PoolSettingsInput } from '../domain/pool';
import type { SimulatorStats } from '../github/simulator/server';
import { scaleSetListenerId, scaleSetStateQuery } from '../workflows/scale-set-messages';
import { exitAfter, intArg, ms, percentile, printTable, quietTemporal, runBench, temporalServer, uniqueName, until, type Figure } from './common';
import { api, completedJobs, createPool, poolView, removePool, startBenchStack, stopBenchStack, type BenchPool, type BenchStack } from './stack';

interface ModeResult {
  mode: 'webhook' | 'scaleSet';
  completed: number;
  queueToStartMs: number[];
  restCalls: number;
  actionsCalls: number;
  longPolls: number;
  maxAlive: number;
}

const sum = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);

async function createScaleSetPool(stack: BenchStack, maxRunners: number): Promise<BenchPool> {
  const name = uniqueName('bench-ss').toLowerCase().slice(0, 40);
  const settings: PoolSettingsInput = {
    name,
    mode: 'scaleSet',
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'bench', repo: name } },
    labels: ['self-hosted', 'linux'],
    provider: SIMULATED_PROVIDER,
    maxRunners,
  };
  const res = await api(stack, 'POST', '/api/v1/pools', settings);
  if (res.status !== 201) throw new Error(`pool not created (${res.status}): ${JSON.stringify(res.body)}`);
  const listening = await until(async () => {
    const s = await stack.client.workflow.getHandle(scaleSetListenerId(name)).query(scaleSetStateQuery);
    return s.status === 'listening' ? true : undefined;
  }, 60_000, 200);
  if (!listening) throw new Error('the scale-set listener never listened');
  return { name, repository: `bench/${name}`, labels: [name] };
}

async function run(stack: BenchStack, mode: ModeResult['mode'], jobs: number, maxRunners: number, timeoutMs: number): Promise<ModeResult> {
  const pool = mode === 'webhook' ? await createPool(stack, maxRunners) : await createScaleSetPool(stack, maxRunners);
  const before: SimulatorStats = stack.sim.stats();
  const ids = new Set(Array.from({ length: jobs }, () => stack.sim.queueJob({ repository: pool.repository, labels: pool.labels }).id));
  let maxAlive = 0;
  await until(() => {
    maxAlive = Math.max(maxAlive, stack.machines.countNamed(`${pool.name}-`));
    return completedJobs(stack, ids) === jobs ? true : undefined;
  }, timeoutMs, 100);
  await until(async () => ((await poolView(stack, pool)).runners.length === 0 ? true : undefined), 60_000, 200);
  await removePool(stack, pool);
  if (mode === 'scaleSet') {
    await until(async () => ((await stack.client.workflow.getHandle(scaleSetListenerId(pool.name)).describe()).status.name === 'RUNNING' ? undefined : true), 30_000, 200);
  }
  const after = stack.sim.stats();
  const finished = stack.sim.jobs().filter((j) => ids.has(j.id) && j.startedAt);
  return {
    mode,
    completed: completedJobs(stack, ids),
    queueToStartMs: finished.map((j) => Date.parse(j.startedAt!) - Date.parse(j.createdAt)),
    restCalls: after.totalApiCalls - before.totalApiCalls,
    actionsCalls: sum(after.actionsCalls) - sum(before.actionsCalls),
    longPolls: (after.actionsCalls['get-message'] ?? 0) - (before.actionsCalls['get-message'] ?? 0),
    maxAlive,
  };
}

async function main(): Promise<void> {
  const jobs = intArg('jobs', 50);
  const maxRunners = intArg('max-runners', 10);
  const timeoutMs = 60_000 + jobs * 2_000;
  exitAfter(2 * timeoutMs + 240_000, 'scale-set');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const stack = await startBenchStack(temporal.address, 200);
  try {
    console.log(`scale-set: ${jobs} jobs of 200 ms per mode, pools of max ${maxRunners} runners, on ${temporal.address}`);
    const results = [await run(stack, 'webhook', jobs, maxRunners, timeoutMs), await run(stack, 'scaleSet', jobs, maxRunners, timeoutMs)];
    const figures: Figure[] = [];
    for (const r of results) {
      const q = r.queueToStartMs;
      const perJob = (n: number) => (r.completed > 0 ? (n / r.completed).toFixed(2) : 'n/a');
      figures.push(
        { figure: `${r.mode}: jobs completed`, value: `${r.completed}/${jobs}`, target: `${jobs}`, met: r.completed === jobs },
        { figure: `${r.mode}: most machines alive`, value: String(r.maxAlive), target: `≤ ${maxRunners}`, met: r.maxAlive <= maxRunners },
        { figure: `${r.mode}: queue-to-start p50 / p95 / p99 / max`, value: [50, 95, 99, 100].map((p) => ms(percentile(q, p))).join(' / ') },
        { figure: `${r.mode}: REST calls`, value: `${r.restCalls} (${perJob(r.restCalls)}/job)` },
        { figure: `${r.mode}: Actions-service calls (long polls)`, value: `${r.actionsCalls} (${perJob(r.actionsCalls)}/job; ${r.longPolls} polls)` },
        { figure: `${r.mode}: GitHub calls per job`, value: perJob(r.restCalls + r.actionsCalls) },
      );
    }
    printTable(`Scale-set mode beside webhook mode (${jobs} jobs each, simulated machines)`, figures);
  } finally {
    await stopBenchStack(stack);
    temporal.release();
  }
}

runBench('scale-set', main);
