/**
 * A burst of queued jobs against one pool (default 300 jobs, pool max 20):
 * how long the pool takes to drain it, whether it ever has more than its
 * maximum alive, what the process's memory does, and how long the Temporal
 * histories get (target: a runner's whole life well under 200 events).
 *
 *   npx tsx bench/burst.ts [--jobs 300] [--max-runners 20]
 *
 * Worker, API and GitHub simulator share this process, so the memory figures
 * are theirs together: the worker's cost plus a constant for the other two.
 */
import type { DevStack } from '../devstack/stack';
import { runnerWorkflowId } from '../workflows/messages';
import { poolWorkflowId } from '../workflows/pool-messages';
import { exitAfter, intArg, mb, ms, percentile, printTable, quietTemporal, runBench, sleep, temporalServer, until } from './common';
import { completedJobs, createPool, poolView, removePool, startBenchStack, stopBenchStack, type BenchPool, type BenchStack } from './stack';

const RUNNER_HISTORY_TARGET = 200;

/** Peaks seen while the burst runs: alive runners by three counts, and memory. */
class Sampler {
  machines = 0;
  poolRunners = 0;
  githubRunners = 0;
  peakRss = 0;
  peakHeap = 0;
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(stack: BenchStack, pool: BenchPool) {
    this.loops = [
      this.every(100, () => {
        const { rss, heapUsed } = process.memoryUsage();
        this.peakRss = Math.max(this.peakRss, rss);
        this.peakHeap = Math.max(this.peakHeap, heapUsed);
        this.machines = Math.max(this.machines, stack.machines.countNamed(`${pool.name}-`));
        this.githubRunners = Math.max(this.githubRunners, stack.sim.stats().runners);
      }),
      // A query is a task on the worker the burst keeps busy: asked less often.
      this.every(250, async () => {
        this.poolRunners = Math.max(this.poolRunners, (await poolView(stack, pool)).runners.length);
      }),
    ];
  }

  private async every(intervalMs: number, sample: () => Promise<void> | void): Promise<void> {
    while (this.running) {
      try {
        await sample();
      } catch {
        // A query during the pool's continue-as-new fails: the next sample will do.
      }
      await sleep(intervalMs);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/** History length of every run of a workflow id (the pool continues as new). */
async function historyLengths(stack: DevStack, workflowId: string): Promise<number[]> {
  const runIds = new Set<string>();
  for await (const run of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) runIds.add(run.runId);
  runIds.add((await stack.client.workflow.getHandle(workflowId).describe()).runId);
  const lengths: number[] = [];
  for (const runId of runIds) lengths.push((await stack.client.workflow.getHandle(workflowId, runId).describe()).historyLength);
  return lengths;
}

async function runnerHistoryLengths(stack: DevStack, names: string[]): Promise<number[]> {
  const lengths: number[] = [];
  const queue = [...names];
  // A few describes at a time: enough to be quick, few enough not to crowd the server.
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
        lengths.push((await stack.client.workflow.getHandle(runnerWorkflowId(name)).describe()).historyLength);
      }
    }),
  );
  return lengths;
}

async function main(): Promise<void> {
  const jobs = intArg('jobs', 300);
  const maxRunners = intArg('max-runners', 20);
  const timeoutMs = 60_000 + jobs * 1_000;
  exitAfter(timeoutMs + 180_000, 'burst');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const stack = await startBenchStack(temporal.address, 100);
  try {
    const pool = await createPool(stack, maxRunners);
    console.log(`burst: ${jobs} jobs queued at once, pool max ${maxRunners} runners, on ${temporal.address}`);
    const memBefore = process.memoryUsage();
    const sampler = new Sampler(stack, pool);
    const started = Date.now();
    const ids = new Set(Array.from({ length: jobs }, () => stack.sim.queueJob({ repository: pool.repository, labels: pool.labels }).id));
    let jobsDoneAt: number | undefined;
    let emptyAt: number | undefined;
    try {
      if (await until(() => (completedJobs(stack, ids) === jobs ? true : undefined), timeoutMs, 50)) jobsDoneAt = Date.now();
      const empty = await until(async () => {
        const v = await poolView(stack, pool);
        return v.runners.length === 0 && v.queuedJobs.length === 0 ? true : undefined;
      }, 60_000, 100);
      if (empty) emptyAt = Date.now();
    } finally {
      await sampler.stop();
    }
    const memAfter = process.memoryUsage();

    const ran = stack.sim.jobs().filter((j) => ids.has(j.id));
    const completed = ran.filter((j) => j.status === 'completed');
    const runnerNames = [...new Set(completed.map((j) => j.runnerName).filter((n): n is string => n !== undefined))];
    const poolHistory = await historyLengths(stack, poolWorkflowId(pool.name));
    const runnerHistory = await runnerHistoryLengths(stack, runnerNames);
    await removePool(stack, pool);

    const drainMs = (jobsDoneAt ?? Date.now()) - started;
    const alive = (label: string, n: number) => ({ figure: `max runners alive (${label})`, value: String(n), target: `≤ ${maxRunners}`, met: n <= maxRunners });
    printTable(`Burst: ${jobs} queued jobs, pool max ${maxRunners} (simulated machines, job ${100} ms)`, [
      { figure: 'jobs completed', value: `${completed.length}/${jobs}`, target: String(jobs), met: jobsDoneAt !== undefined },
      { figure: 'jobs that did not succeed', value: String(completed.filter((j) => j.conclusion !== 'success').length), target: '0', met: completed.every((j) => j.conclusion === 'success') },
      { figure: 'distinct runners used', value: String(runnerNames.length), target: `${jobs} (one per job)`, met: runnerNames.length === jobs },
      { figure: 'time to run every job', value: ms(drainMs) },
      { figure: 'jobs per second', value: (completed.length / (drainMs / 1000)).toFixed(1) },
      { figure: 'time until the pool is empty', value: emptyAt ? ms(emptyAt - started) : 'not empty', met: emptyAt !== undefined, target: 'empties' },
      alive('machines', sampler.machines),
      alive('pool workflow view', sampler.poolRunners),
      alive('registered at GitHub', sampler.githubRunners),
      { figure: 'RSS before / after / peak', value: `${mb(memBefore.rss)} / ${mb(memAfter.rss)} / ${mb(Math.max(sampler.peakRss, memAfter.rss))}` },
      { figure: 'heap used before / after / peak', value: `${mb(memBefore.heapUsed)} / ${mb(memAfter.heapUsed)} / ${mb(Math.max(sampler.peakHeap, memAfter.heapUsed))}` },
      { figure: 'pool history: runs / events', value: `${poolHistory.length} / ${poolHistory.reduce((a, b) => a + b, 0)} (largest run ${Math.max(...poolHistory)})` },
      { figure: 'runner history p50 / p95', value: `${percentile(runnerHistory, 50)} / ${percentile(runnerHistory, 95)} events` },
      {
        figure: 'runner history max',
        value: `${Math.max(...runnerHistory)} events`,
        target: `< ${RUNNER_HISTORY_TARGET}`,
        met: runnerHistory.length > 0 && Math.max(...runnerHistory) < RUNNER_HISTORY_TARGET,
      },
    ]);
  } finally {
    await stopBenchStack(stack);
    temporal.release();
  }
}

runBench('burst', main);
