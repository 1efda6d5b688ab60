/**
 * Many idle runners held by one worker. Targets: 5,000 live idle runners with
 * worker RSS ≤ 1 GiB, RSS growing sublinearly with N (run N = 1,000, 2,500,
 * 5,000), and scale-up ≥ 50 runners/s from an empty pool.
 *
 * A pool with `minIdleRunners` N (and `maxRunners` N) is created on simulated
 * machines; the bench waits until N runner agents are online and idle, then
 * for the worker to settle. The worker runs in a process of its own (as in
 * production), so its RSS is the worker's alone; the API and the GitHub
 * simulator with its thousands of agents live elsewhere.
 *
 *   npx tsx bench/live-runners.ts --runners 1000
 *   npx tsx bench/live-runners.ts --runners 5000 [--heap-mb 512]
 *
 * --timeline prints, each second of the scale-up, how many runners are idle
 * and how busy each process kept the cores: where a ramp or a stall is.
 *
 * Once all are idle, one liveness machine pass runs over the fleet: its duration, and
 * that it asks none of the pool's own runners to leave.
 *
 * --heap-mb caps the worker's V8 heap (`--max-old-space-size`), as an operator
 * with a memory budget runs it; by default V8 lets the heap grow towards a
 * quarter of the machine's memory before it collects hard.
 *
 * --workers N runs N worker processes on the one task queue, as an installation
 * that has outgrown one worker does; the RSS figures are then the largest
 * worker's. A create attempt cut off in one worker is often retried in another,
 * so the JIT configs minted per runner show whether a runner was registered twice.
 */
import { exitAfter, intArg, mb, ms, printTable, quietTemporal, runBench, sleep, stopOnInterrupt, temporalServer, until } from './common';
import { cpuBetween, cpuSnapshot, rssOf } from './cpu';
import { terminatePoolWorkflows } from './stack';
import { processStackRequest, startProcessStack } from '../devstack/process-stack';
import { SIMULATED_PROVIDER } from '../devstack/stack';
import type { PoolSettingsInput } from '../domain/pool';
import { livenessCheck } from '../workflows/liveness-check';
import { poolStateQuery, poolWorkflowId } from '../workflows/pool-messages';
import { uniqueName } from './common';

/** One line a second: runners idle so far, and the cores each process kept busy in that second. */
async function printTimeline(started: number, pids: Record<string, number | undefined>, idle: () => number, on: () => boolean): Promise<void> {
  let before = cpuSnapshot(pids);
  let idleBefore = idle();
  while (on()) {
    await sleep(1_000);
    const after = cpuSnapshot(pids);
    const idleNow = idle();
    const rows = cpuBetween(before, after).filter((r) => !r.what.includes(': '));
    const cores = rows.map((r) => `${r.what.split(' (')[0]} ${r.seconds.toFixed(2)}`).join(', ');
    console.log(`  ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s  idle ${String(idleNow).padStart(5)} (+${idleNow - idleBefore})  cores: ${cores}`);
    before = after;
    idleBefore = idleNow;
  }
}

const RSS_TARGET = 1024 * 1024 * 1024;
const RATE_TARGET = 50;

async function main(): Promise<void> {
  const n = intArg('runners', 1_000);
  const settleMs = intArg('settle-ms', 10_000);
  const heapMb = intArg('heap-mb', 0, { allowZero: true });
  const timeline = process.argv.includes('--timeline');
  const workerCount = intArg('workers', 1);
  // The stack's processes take their Node flags from here (devstack/processes/spawn.ts).
  if (heapMb > 0) process.env.RUNNERFLOW_STACK_NODE_ARGS = [process.env.RUNNERFLOW_STACK_NODE_ARGS, `--max-old-space-size=${heapMb}`].filter(Boolean).join(' ');
  const timeoutMs = 60_000 + n * 200;
  // Terminating thousands of workflows takes the dev server minutes when the machine is busy.
  const cleanupMs = 120_000 + n * 200;
  exitAfter(timeoutMs + settleMs + cleanupMs + 300_000, 'live-runners');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const taskQueue = uniqueName('live-tq');
  const stack = stopOnInterrupt(
    await startProcessStack({
      temporalAddress: temporal.address,
      taskQueue,
      workers: workerCount,
      apis: 1,
      // GitHub's 5,000 calls an hour per App installation (the simulator's default) would
      // hold thousands of new runners back for the rest of the hour: measured here is the
      // orchestration, so the simulated token has no primary limit (GitHub Enterprise Cloud
      // installations get 15,000, and several installations spread the load).
      simulator: { jobDurationMs: 1_000, webhookConcurrency: 64, rateLimit: Number.MAX_SAFE_INTEGER },
    }),
  );
  const workerRss = () => Math.max(...stack.workers.map((w) => rssOf(w.child.pid!)));
  const workerNames = workerCount === 1 ? ['worker process'] : stack.workers.map((_, i) => `worker process ${i + 1}`);
  const name = uniqueName('live').toLowerCase().slice(0, 40);
  const pool = { name, labels: ['self-hosted', 'linux', name] };
  try {
    await sleep(2_000);
    const rssBefore = workerRss();
    let peakRss = rssBefore;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakRss = Math.max(peakRss, workerRss());
        await sleep(200);
      }
    })();
    const settings: PoolSettingsInput = {
      name,
      github: { credentials: 'default', scope: { kind: 'repo', owner: 'bench', repo: name } },
      labels: pool.labels,
      provider: SIMULATED_PROVIDER,
      minIdleRunners: n,
      maxRunners: n,
      idleTimeout: 24 * 3_600_000,
      bootstrapTimeout: 30 * 60_000,
    };
    console.log(`live-runners: pool ${name} with ${n} idle runners on ${temporal.address}`);
    const pids = { 'bench process (simulator, agents)': process.pid, ...Object.fromEntries(workerNames.map((w, i) => [w, stack.workers[i]?.child.pid])), 'API process': stack.apis[0]?.child.pid };
    const mintedBefore = stack.sim.stats().callsByOperation['generate-jitconfig'] ?? 0;
    const cpuBefore = cpuSnapshot(pids);
    const started = Date.now();
    const res = await processStackRequest(stack, 'POST', '/api/v1/pools', settings);
    if (res.status !== 201) throw new Error(`pool not created (${res.status}): ${JSON.stringify(res.body)}`);
    const idleAgents = () => stack.sim.agents().filter((a) => a.state === 'idle' && a.runnerName.startsWith(name)).length;
    let half: number | undefined;
    let timelineOn = timeline;
    const timelineDone = timeline ? printTimeline(started, pids, idleAgents, () => timelineOn) : Promise.resolve();
    const allIdle = await until(() => {
      const idle = idleAgents();
      if (half === undefined && idle >= n / 2) half = Date.now();
      return idle >= n ? Date.now() : undefined;
    }, timeoutMs, 200);
    timelineOn = false;
    await timelineDone;
    const idleCount = idleAgents();
    const minted = (stack.sim.stats().callsByOperation['generate-jitconfig'] ?? 0) - mintedBefore;
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(pids));
    const busyCores = (cpu.at(-1)?.seconds ?? 0) / ((Date.now() - started) / 1000);
    const poolIdle = allIdle ? await until(async () => ((await stack.client.workflow.getHandle(poolWorkflowId(name)).query(poolStateQuery)).runners.filter((r) => r.runnerStatus === 'idle').length >= n ? Date.now() : undefined), 120_000, 1_000) : undefined;
    await sleep(settleMs);
    const rssSettled = workerRss();
    sampling = false;
    await sampler;
    // One machine pass over the whole fleet: what it costs, and that it asks none of the pool's
    // own runners to leave (each is counted by its pool, and its machine is listed).
    const passStarted = Date.now();
    const pass = await stack.client.workflow
      .execute(livenessCheck, { taskQueue, workflowId: uniqueName('liveness-bench'), args: [{ provider: SIMULATED_PROVIDER, check: 'machines' }] })
      .catch((err: unknown) => {
        console.error(`liveness pass failed: ${String(err)}`);
        return undefined;
      });
    const passMs = Date.now() - passStarted;
    const askedToLeave = pass ? pass.signalled.length + pass.orphaned.length + pass.uncounted.length : undefined;
    const cleaned = await terminatePoolWorkflows({ client: stack.client, namespace: 'default' }, pool, cleanupMs).catch((err: unknown) => {
      console.error(`clean-up failed: ${String(err)}`);
      return false;
    });

    const tookMs = (allIdle ?? Date.now()) - started;
    const rate = idleCount / (tookMs / 1000);
    // With several workers, each holds about its share of the runners.
    const perRunner = (rssSettled - rssBefore) / Math.max(1, idleCount / workerCount);
    const rssOfWhat = workerCount === 1 ? 'worker RSS' : `largest worker's RSS`;
    printTable(`Live idle runners: ${n} (simulated machines), ${workerCount === 1 ? 'one worker' : `${workerCount} workers`}${heapMb > 0 ? `, V8 heap limit ${heapMb} MB` : ''}`, [
      { figure: 'runners online and idle', value: `${idleCount}/${n}`, target: String(n), met: idleCount >= n },
      { figure: 'time until all idle (GitHub side)', value: ms(tookMs) },
      { figure: 'time until the pool sees all idle', value: poolIdle ? ms(poolIdle - started) : 'not seen' },
      { figure: 'time until half idle', value: half ? ms(half - started) : 'not reached' },
      { figure: 'runners per second (scale-up from empty)', value: rate.toFixed(1), target: `≥ ${RATE_TARGET}`, met: rate >= RATE_TARGET },
      // Over 1.00 when an attempt minted again: a retry after a failure, or a runner registered twice.
      { figure: 'JIT configs minted per runner', value: (minted / Math.max(1, idleCount)).toFixed(2) },
      { figure: `${rssOfWhat} before the pool`, value: mb(rssBefore) },
      { figure: `${rssOfWhat} with ${n} idle (after ${settleMs / 1000} s)`, value: mb(rssSettled), target: '≤ 1024 MB', met: rssSettled <= RSS_TARGET },
      { figure: `${rssOfWhat} peak`, value: mb(peakRss) },
      { figure: `${rssOfWhat} per idle runner`, value: `${(perRunner / 1024).toFixed(0)} KB` },
      { figure: `one machine liveness pass over ${pass?.instances ?? '?'} listed runners`, value: pass ? ms(passMs) : 'failed' },
      { figure: 'runners that pass asked to leave', value: askedToLeave === undefined ? 'failed' : String(askedToLeave), target: '0', met: askedToLeave === 0 && (pass?.failed.length ?? 1) === 0 },
      { figure: 'machine busy while scaling up (2 cores = 2.0)', value: `${busyCores.toFixed(2)} cores` },
      // Core-milliseconds per runner brought online, from creating the pool until the last was idle.
      ...cpu.map(({ what, seconds }) => ({ figure: `CPU per runner: ${what}`, value: `${((seconds * 1000) / Math.max(1, idleCount)).toFixed(1)} core-ms` })),
      { figure: 'workflows terminated at the end', value: cleaned ? 'all' : 'some left', target: 'all', met: cleaned },
    ]);
  } finally {
    await stack.stop();
    temporal.release();
  }
}

runBench('live-runners', main);
