/**
 * What many pools cost while nothing happens, and while they are watched.
 *
 * A large organisation runs hundreds of pools (one per team, image and size), most of them idle
 * most of the time. The bench creates N pools of one idle runner each on simulated machines, with
 * the production defaults for every periodic check (liveness, sweep, redelivery, the pools' own
 * looks), then measures two windows of the same length:
 *
 * - **idle**: nobody looks; what the installation costs by itself;
 * - **watched**: Prometheus scrapes `/metrics` every 15 s and `--dashboards` open dashboards (2 by
 *   default) poll `/api/v1/summary` as the page does: 1.5 s after each answer, or twice as long as
 *   the answer took when that is longer (`--fixed-poll` leaves that out, as the page did before),
 *   and `/api/v1/status` about every 30 s, as the page does.
 *
 * It prints the machine's CPU per process in each window, per pool and minute, the worker's
 * RSS, and how long a scrape and a dashboard poll take. Run it for several N (50, 200, 500) to see
 * whether the cost grows with the pools and by how much.
 *
 *   npx tsx bench/many-pools.ts --pools 200 [--window-s 60] [--settle-s 30] [--cache 250] [--dashboards 2] [--fixed-poll] [--org]
 *
 * --cache sets `temporal.workflowCacheSize`, the workflows the worker keeps in memory. --org
 * makes every pool an organisation pool of one organisation (each pool a repository of its own
 * otherwise): the sweep's look for lost jobs then needs each pool's recent repositories.
 */
import { processStackRequest, startProcessStack } from '../devstack/process-stack';
import { SIMULATED_PROVIDER } from '../devstack/stack';
import { WORKFLOW_CACHE_SIZE } from '../config/schema';
import type { PoolSettingsInput } from '../domain/pool';
import { cpuBetween, cpuSnapshot, rssOf } from './cpu';
import { exitAfter, intArg, mb, ms, percentile, printTable, quietTemporal, runBench, sleep, stopOnInterrupt, temporalServer, uniqueName, until, type Figure } from './common';

const SCRAPE_EVERY_MS = 15_000;
/** The dashboard page's pause between polls (ui/app.js). */
const DASHBOARD_POLL_MS = 1_500;
/** The page asks for the installation's status every 20th poll: about every 30 s. */
const STATUS_EVERY_MS = 30_000;
const CREATE_PARALLEL = 10;

runBench('many-pools', async () => {
  const n = intArg('pools', 200);
  const windowMs = intArg('window-s', 60) * 1_000;
  const cacheSize = intArg('cache', WORKFLOW_CACHE_SIZE);
  const settleMs = intArg('settle-s', 30) * 1_000;
  const dashboards = intArg('dashboards', 2);
  const fixedPoll = process.argv.includes('--fixed-poll');
  const orgPools = process.argv.includes('--org');
  exitAfter(10 * 60_000 + n * 1_000 + 2 * windowMs + settleMs, 'many-pools');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const taskQueue = uniqueName('pools-tq');
  const stack = stopOnInterrupt(
    await startProcessStack({
      temporalAddress: temporal.address,
      taskQueue,
      workers: 1,
      apis: 1,
      simulator: { jobDurationMs: 1_000, webhookConcurrency: 16, rateLimit: Number.MAX_SAFE_INTEGER },
      config: { temporal: { workflowCacheSize: cacheSize } },
    }),
  );
  const prefix = uniqueName('mp').toLowerCase().slice(0, 24);
  try {
    console.log(`many-pools: ${n} ${orgPools ? 'organisation' : 'repository'} pools of one idle runner each on ${temporal.address}`);
    const started = Date.now();
    const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    for (let i = 0; i < n; i += CREATE_PARALLEL) {
      await Promise.all(
        names.slice(i, i + CREATE_PARALLEL).map(async (name) => {
          const settings: PoolSettingsInput = {
            name,
            github: { credentials: 'default', scope: orgPools ? { kind: 'org', org: 'bench' } : { kind: 'repo', owner: 'bench', repo: name } },
            labels: ['self-hosted', 'linux', name],
            provider: SIMULATED_PROVIDER,
            minIdleRunners: 1,
            maxRunners: 2,
            idleTimeout: 24 * 3_600_000,
            bootstrapTimeout: 30 * 60_000,
          };
          const res = await processStackRequest(stack, 'POST', '/api/v1/pools', settings);
          if (res.status !== 201) throw new Error(`pool ${name} not created (${res.status}): ${JSON.stringify(res.body)}`);
        }),
      );
    }
    const idle = () => stack.sim.agents().filter((a) => a.state === 'idle' && a.runnerName.startsWith(prefix)).length;
    const allIdle = await until(() => (idle() >= n ? Date.now() : undefined), 120_000 + n * 500, 500);
    console.log(`many-pools: ${idle()}/${n} runners idle after ${ms(Date.now() - started)}; settling`);
    // The pools' first minutes hold their creation's work: let it pass before measuring.
    await sleep(settleMs);

    const pids = { 'bench process (simulator, agents)': process.pid, 'worker process': stack.workers[0]?.child.pid, 'API process': stack.apis[0]?.child.pid };
    const idleBefore = cpuSnapshot(pids);
    await sleep(windowMs);
    const idleCpu = cpuBetween(idleBefore, cpuSnapshot(pids));

    const scrapes: number[] = [];
    const polls: number[] = [];
    const statuses: number[] = [];
    const failures: string[] = [];
    const timed = async (path: string, into: number[]) => {
      const t0 = Date.now();
      const res = await fetch(`${stack.apis[0]!.url}${path}`, { headers: { authorization: `Bearer ${stack.adminToken}` } });
      await res.text();
      const took = Date.now() - t0;
      into.push(took);
      if (res.status !== 200) failures.push(`${path} answered ${res.status}`);
      return took;
    };
    const watchedBefore = cpuSnapshot(pids);
    const watchStarted = Date.now();
    const loops = [
      (async () => {
        while (Date.now() - watchStarted < windowMs) {
          const took = await timed('/metrics', scrapes);
          await sleep(Math.max(0, SCRAPE_EVERY_MS - took));
        }
      })(),
      ...Array.from({ length: dashboards }, async () => {
        while (Date.now() - watchStarted < windowMs) {
          const took = await timed('/api/v1/summary', polls);
          await sleep(fixedPoll ? DASHBOARD_POLL_MS : Math.max(DASHBOARD_POLL_MS, 2 * took));
        }
      }),
      ...Array.from({ length: dashboards }, async () => {
        while (Date.now() - watchStarted < windowMs) {
          const took = await timed('/api/v1/status', statuses);
          await sleep(Math.max(0, STATUS_EVERY_MS - took));
        }
      }),
    ];
    await Promise.all(loops);
    const watchedCpu = cpuBetween(watchedBefore, cpuSnapshot(pids));
    const workerRss = rssOf(stack.workers[0]!.child.pid!);

    const perPoolMinute = (seconds: number) => `${((seconds * 1000) / n / (windowMs / 60_000)).toFixed(1)} core-ms`;
    const byProcess = (rows: ReturnType<typeof cpuBetween>, label: string): Figure[] =>
      rows
        .filter((r) => !r.what.includes(': '))
        .map(({ what, seconds }) => ({ figure: `${label}: ${what}`, value: `${(seconds / (windowMs / 1000)).toFixed(3)} cores; ${perPoolMinute(seconds)} per pool and minute` }));
    printTable(`Many pools: ${n} ${orgPools ? 'organisation ' : ''}pools, one idle runner each, production check intervals, ${windowMs / 1000} s windows, ${cacheSize} workflows cached`, [
      { figure: 'runners idle', value: `${idle()}/${n}`, target: String(n), met: idle() >= n },
      { figure: 'time until all idle', value: allIdle ? ms(allIdle - started) : 'not reached' },
      ...byProcess(idleCpu, 'idle'),
      ...byProcess(watchedCpu, 'watched'),
      { figure: '/metrics scrape (every 15 s): p50 / max', value: `${ms(percentile(scrapes, 50))} / ${ms(Math.max(...scrapes))} (${scrapes.length} scrapes)` },
      { figure: `/api/v1/summary poll (${dashboards} dashboards${fixedPoll ? ', 1.5 s pauses' : ''}): p50 / max`, value: `${ms(percentile(polls, 50))} / ${ms(Math.max(...polls))} (${polls.length} polls)` },
      { figure: `/api/v1/status (${dashboards} dashboards, every 30 s): p50 / max`, value: `${ms(percentile(statuses, 50))} / ${ms(Math.max(...statuses))} (${statuses.length} reads)` },
      { figure: 'failed reads', value: failures.length === 0 ? 'none' : failures.slice(0, 3).join('; '), target: 'none', met: failures.length === 0 },
      { figure: 'worker RSS', value: mb(workerRss) },
    ]);
  } finally {
    await stack.stop();
    temporal.release();
  }
});
