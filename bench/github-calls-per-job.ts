/**
 * Target: about one GitHub API call per ephemeral job (its JIT config).
 *
 * K jobs go through the whole stack (simulated GitHub, webhooks, API, pool,
 * runner workflows, simulated machines); the simulator counts every REST call
 * it receives, by operation. Runners leaving, the pool draining and the pool's
 * deletion are included in the count.
 *
 *   npx tsx bench/github-calls-per-job.ts [--jobs 50] [--max-runners 10]
 */
import { exitAfter, intArg, printTable, quietTemporal, runBench, temporalServer, until, type Figure } from './common';
import { completedJobs, createPool, poolView, removePool, startBenchStack, stopBenchStack } from './stack';

/** One JIT config per job, and a little room for the runner-downloads lookup (cached per scope). */
const TARGET_PER_JOB = 1.1;

async function main(): Promise<void> {
  const jobs = intArg('jobs', 50);
  const maxRunners = intArg('max-runners', 10);
  const timeoutMs = 60_000 + jobs * 2_000;
  exitAfter(timeoutMs + 120_000, 'github-calls-per-job');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const stack = await startBenchStack(temporal.address, 200);
  try {
    const pool = await createPool(stack, maxRunners);
    console.log(`github-calls-per-job: ${jobs} jobs, pool max ${maxRunners} runners, on ${temporal.address}`);
    const before = stack.sim.stats();
    const ids = new Set(Array.from({ length: jobs }, () => stack.sim.queueJob({ repository: pool.repository, labels: pool.labels }).id));
    const done = await until(() => (completedJobs(stack, ids) === jobs ? true : undefined), timeoutMs, 200);
    // Runners leave after their job: wait for the pool to be empty so their calls (if any) are counted too.
    const drained = await until(async () => {
      const v = await poolView(stack, pool);
      return v.runners.length === 0 && v.queuedJobs.length === 0 ? true : undefined;
    }, 60_000, 200);
    await removePool(stack, pool);
    const after = stack.sim.stats();

    const ops = new Set([...Object.keys(before.callsByOperation), ...Object.keys(after.callsByOperation)]) as Set<keyof typeof after.callsByOperation>;
    const delta = (op: keyof typeof after.callsByOperation) => (after.callsByOperation[op] ?? 0) - (before.callsByOperation[op] ?? 0);
    const completed = completedJobs(stack, ids);
    const perJob = (n: number) => (completed > 0 ? (n / completed).toFixed(2) : 'n/a');
    const total = after.totalApiCalls - before.totalApiCalls;
    const figures: Figure[] = [
      { figure: 'jobs completed', value: `${completed}/${jobs}`, target: `${jobs}`, met: done === true },
      { figure: 'pool empty after the jobs', value: drained ? 'yes' : 'no', target: 'yes', met: drained === true },
      ...[...ops]
        .filter((op) => delta(op) > 0)
        .sort()
        .map((op) => ({
          figure: `calls: ${op}`,
          value: `${delta(op)} (${perJob(delta(op))}/job)`,
          ...(op === 'generate-jitconfig' ? { target: '1.00/job', met: delta(op) === completed } : {}),
        })),
      { figure: 'calls: total', value: String(total) },
      { figure: 'calls per job', value: perJob(total), target: `≤ ${TARGET_PER_JOB}`, met: completed > 0 && total / completed <= TARGET_PER_JOB },
    ];
    printTable(`GitHub API calls per ephemeral job (${jobs} jobs through the full stack, simulated machines)`, figures);
  } finally {
    await stopBenchStack(stack);
    temporal.release();
  }
}

runBench('github-calls-per-job', main);
