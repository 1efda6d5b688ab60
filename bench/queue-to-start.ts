/**
 * Queue-to-start and sustained throughput. Targets: at 10 jobs/s, p50 ≤ 300 ms
 * and p99 ≤ 1 s; at 50 jobs/s for 60 s, p99 ≤ 1 s with the queue keeping up,
 * and ≥ 50 complete ephemeral lifecycles per second.
 *
 * Jobs are queued in the GitHub simulator at a steady rate; it sends the
 * webhooks (64 in flight, as GitHub delivers in parallel), runners are
 * simulated machines (ready at once), so every millisecond is orchestration.
 * Queue-to-start is GitHub's createdAt → startedAt as the simulator records it.
 * "Kept up": when queueing stops, fewer than one second's worth of jobs wait.
 * Also prints where one job's time goes (bench/job-path.ts) and the most
 * machines alive, which must never exceed the pool's max.
 *
 *   npx tsx bench/queue-to-start.ts [--rate 10] [--seconds 10] [--max-runners 100] [--job-ms 1000] [--processes] [--idle-report-hold MS]
 *   npx tsx bench/queue-to-start.ts --rate 50 --seconds 60 --max-runners 300
 *
 * --processes: worker and API each in a process of their own, as deployed; by
 * default everything shares this process (the simulator always stays here).
 * --idle-report-hold sets `api.idleReportHold` (0 signals agents' `idle` at once).
 */
import { completionRate, exitAfter, intArg, ms, percentile, printTable, quietTemporal, runBench, sleep, temporalServer, until, type Figure } from './common';
import { cpus } from 'node:os';
import { cpuBetween, cpuSnapshot, type CpuRow } from './cpu';
import { breakdownFigures, jobPathBreakdown } from './job-path';
import { completedJobs, createPool, removePool, startBenchStack, startProcessBenchStack, stopBenchStack } from './stack';
import { poolWorkflowId } from '../workflows/pool-messages';

const P50_TARGET_MS = 300;
const P99_TARGET_MS = 1_000;
const LIFECYCLES_TARGET = 50;

async function main(): Promise<void> {
  const rate = intArg('rate', 10);
  const seconds = intArg('seconds', 10);
  const maxRunners = intArg('max-runners', 100);
  const jobMs = intArg('job-ms', 1_000);
  const total = rate * seconds;
  const drainMs = 120_000;
  exitAfter(seconds * 1_000 + drainMs + 240_000, 'queue-to-start');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const processes = process.argv.includes('--processes');
  const idleReportHold = process.argv.some((a) => a.startsWith('--idle-report-hold')) ? intArg('idle-report-hold', 0, { allowZero: true }) : undefined;
  const config = idleReportHold === undefined ? {} : { api: { idleReportHold } };
  const stack = processes ? await startProcessBenchStack(temporal.address, jobMs, 64, config) : await startBenchStack(temporal.address, jobMs, 64, config);
  try {
    const pool = await createPool(stack, maxRunners);
    console.log(`queue-to-start: ${total} jobs at ${rate}/s for ${seconds} s, pool max ${maxRunners}, ${jobMs} ms jobs, on ${temporal.address}${processes ? ', worker and API in processes of their own' : ''}`);
    let maxMachines = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxMachines = Math.max(maxMachines, stack.machines.countNamed(`${pool.name}-`));
        await sleep(100);
      }
    })();

    const pids = {
      'bench process': process.pid,
      ...('processes' in stack ? { 'worker process': stack.workers[0]?.child.pid, 'API process': stack.apis[0]?.child.pid } : {}),
    };
    const cpuBefore = cpuSnapshot(pids);
    const ids = new Set<number>();
    const begin = Date.now();
    while (ids.size < total) {
      const due = Math.min(total, Math.floor(((Date.now() - begin) / 1000) * rate) + 1);
      while (ids.size < due) ids.add(stack.sim.queueJob({ repository: pool.repository, labels: pool.labels }).id);
      await sleep(5);
    }
    const queueingMs = Date.now() - begin;
    const backlog = stack.sim.jobs().filter((j) => ids.has(j.id) && j.status === 'queued').length;
    const allStarted = await until(() => (stack.sim.jobs().every((j) => !ids.has(j.id) || j.status !== 'queued') ? true : undefined), drainMs, 50);
    const allDone = await until(() => (completedJobs(stack, ids) === total ? true : undefined), drainMs, 100);
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(pids));
    sampling = false;
    await sampler;

    const jobs = stack.sim.jobs().filter((j) => ids.has(j.id));
    const waits = jobs.filter((j) => j.startedAt).map((j) => Date.parse(j.startedAt!) - Date.parse(j.createdAt));
    const lifecyclesPerS = completionRate(jobs.flatMap((j) => (j.completedAt ? [Date.parse(j.completedAt)] : [])));
    const breakdown = await jobPathBreakdown(stack.client, poolWorkflowId(pool.name), jobs, 40).catch((err: unknown) => {
      console.error(`breakdown not available: ${String(err)}`);
      return undefined;
    });
    await removePool(stack, pool, 60_000);

    const p50 = percentile(waits, 50);
    const p99 = percentile(waits, 99);
    const figures: Figure[] = [
      { figure: 'jobs started / completed', value: `${waits.length} / ${jobs.filter((j) => j.status === 'completed').length} of ${total}`, target: String(total), met: allStarted !== undefined && allDone !== undefined },
      { figure: 'queueing took', value: ms(queueingMs) },
      { figure: 'queue-to-start p50', value: ms(p50), ...(rate <= 10 ? { target: `≤ ${P50_TARGET_MS} ms`, met: p50 <= P50_TARGET_MS } : {}) },
      { figure: 'queue-to-start p95', value: ms(percentile(waits, 95)) },
      { figure: 'queue-to-start p99', value: ms(p99), target: `≤ ${P99_TARGET_MS} ms`, met: waits.length === total && p99 <= P99_TARGET_MS },
      { figure: 'queue-to-start max', value: ms(Math.max(...waits)) },
      { figure: 'jobs waiting when queueing stopped', value: String(backlog), target: `< ${rate} (queue kept up)`, met: backlog < rate },
      {
        figure: 'complete lifecycles per second (first completion → last)',
        value: lifecyclesPerS.toFixed(1),
        ...(rate >= LIFECYCLES_TARGET ? { target: `≥ ${LIFECYCLES_TARGET}`, met: lifecyclesPerS >= LIFECYCLES_TARGET } : {}),
      },
      { figure: 'max machines alive', value: String(maxMachines), target: `≤ ${maxRunners}`, met: maxMachines <= maxRunners },
      ...(breakdown ? breakdownFigures(breakdown) : []),
      // Core-milliseconds per completed lifecycle, from queueing the first job until the last one completed.
      ...cpu.map(({ what, seconds }) => ({ figure: `CPU per lifecycle: ${what}`, value: `${((seconds * 1000) / Math.max(1, completedJobs(stack, ids))).toFixed(1)} core-ms` })),
      ...(processes ? [withoutStandIns(cpu, completedJobs(stack, ids))] : []),
    ];
    printTable(`Queue-to-start: ${rate} jobs/s for ${seconds} s, pool max ${maxRunners}, ${jobMs} ms jobs (simulated machines${processes ? '; worker and API in their own processes' : ''})`, figures);
  } finally {
    if ('processes' in stack) await stack.stop();
    else await stopBenchStack(stack);
    temporal.release();
  }
}

/**
 * With the worker and the API in processes of their own, what runnerflow and the server alone cost
 * a lifecycle, and how many a second the machine's cores could carry at that cost: the GitHub
 * simulator and its runner agents, which a real installation does not run, left out. The
 * simulated machines' bookkeeping runs in the worker and stays counted, as a cloud's API calls
 * would be. A figure to read beside the measured rate, not a target.
 */
function withoutStandIns(cpu: CpuRow[], completed: number): Figure {
  const seconds = (what: string) => cpu.find((row) => row.what === what)?.seconds ?? 0;
  const coreMs = ((seconds('worker process') + seconds('API process') + seconds('rest of the machine (Temporal server, its database)')) * 1000) / Math.max(1, completed);
  const cores = cpus().length;
  return {
    figure: `lifecycles/s the worker, API and server could carry on ${cores} cores at their ${coreMs.toFixed(1)} core-ms, the stand-ins elsewhere`,
    value: coreMs > 0 ? ((cores * 1000) / coreMs).toFixed(1) : 'n/a',
  };
}

runBench('queue-to-start', main);
