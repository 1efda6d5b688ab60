/**
 * What every bench script shares: command-line numbers, a Temporal server to
 * talk to, unique names, a bounded run time, and the table of figures each
 * script prints (each figure next to its target, a missed one marked MISSED).
 */
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installQuietRuntime } from '../devstack/quiet-runtime';
import { devServer, temporalAnswers } from '../devstack/temporal-server';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `--name 5` or `--name=5`; the fallback when absent. */
export function intArg(name: string, fallback: number, options: { allowZero?: boolean } = {}): number {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const raw = arg === `--${name}` ? args[i + 1] : arg.startsWith(`--${name}=`) ? arg.slice(name.length + 3) : undefined;
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < (options.allowZero ? 0 : 1)) throw new Error(`--${name} wants a ${options.allowZero ? 'non-negative' : 'positive'} integer, got "${raw}"`);
    return value;
  }
  return fallback;
}

/** `--name value` or `--name=value`; undefined when absent. */
export function stringArg(name: string): string | undefined {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === `--${name}`) {
      const value = args[i + 1];
      if (value === undefined || value.startsWith('--')) throw new Error(`--${name} wants a value`);
      return value;
    }
    if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
  }
  return undefined;
}

let counter = 0;
/** Names unique per run, so benches never meet each other's (or anyone's) workflows. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid.toString(36)}-${Date.now().toString(36)}-${counter}`;
}

/** A bench's output is its table: only the SDK's errors get through. RUNNERFLOW_BENCH_SDK_METRICS serves its metrics. */
export function quietTemporal(): void {
  installQuietRuntime(process.env.RUNNERFLOW_BENCH_SDK_METRICS);
}

export interface TemporalTarget {
  address: string;
  /** Stops the dev server when this script started it; nothing otherwise. */
  release(): void;
}

/**
 * TEMPORAL_ADDRESS when set; else the local dev server, started through
 * temporal-dev.sh (as `npm start` does) when nothing answers on 127.0.0.1:7233.
 */
export async function temporalServer(log: (m: string) => void): Promise<TemporalTarget> {
  const configured = process.env.TEMPORAL_ADDRESS;
  const address = configured ?? '127.0.0.1:7233';
  if (await temporalAnswers(address)) return { address, release: () => undefined };
  if (configured) throw new Error(`Temporal at TEMPORAL_ADDRESS=${configured} does not answer`);
  // A database file of the bench's own, new for each run, on the same disk as the operator's: the
  // figures then do not depend on what earlier runs left behind. The operator's file is never
  // vacuumed, and after a day of benches (42,000 workflows, 1.5 GB) scale-up read 38 – 46 runners/s
  // against 53 – 55 on a new file, the same code alternating (bench/README.md).
  const ownDb = process.env.TEMPORAL_DB ? undefined : join(ROOT, '.temporal', `bench-${process.pid}.db`);
  const env = ownDb ? { ...process.env, TEMPORAL_DB: ownDb } : process.env;
  log(`no Temporal server on ${address}: starting the local dev server${ownDb ? ` on a database of its own (${ownDb})` : ''}`);
  devServer('start', '7233', 'quiet', env);
  const release = releasedOnInterrupt((): void => {
    devServer('stop', '7233', 'quiet', env);
    if (ownDb) for (const suffix of ['', '-wal', '-shm']) rmSync(`${ownDb}${suffix}`, { force: true });
  });
  return { address, release };
}

type Cleanup = () => void | Promise<void>;
const cleanups = new Set<Cleanup>();
let exiting = false;
/** How long one clean-up may take when a bench is interrupted before the next one runs. */
const CLEANUP_BOUND_MS = 15_000;

/**
 * Registers what must not outlive the bench when it ends early (Ctrl-C, SIGTERM, its time bound, a failure):
 * a dev server it started keeps running detached, and a stack's scratch directory in /dev/shm holds
 * the host's memory until it restarts. A bench that ends normally releases these itself and calls the
 * returned function to forget them. Clean-ups run newest first, so a stack stops before its server.
 */
export function cleanUpOnInterrupt(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  return () => void cleanups.delete(cleanup);
}

/** `release`, also run if the bench ends early; once the bench calls it itself, only then. */
export function releasedOnInterrupt<R extends void | Promise<void>>(release: () => R): () => R {
  const forget = cleanUpOnInterrupt(release);
  return () => {
    forget();
    return release();
  };
}

/** A stack (worker, API, simulator, their scratch directory) stopped if the bench ends early. */
export function stopOnInterrupt<T extends { stop(): Promise<void> }>(stack: T): T {
  stack.stop = releasedOnInterrupt(stack.stop.bind(stack));
  return stack;
}

async function cleanUpAndExit(code: number, why: string): Promise<void> {
  if (exiting) return;
  exiting = true;
  const pending = [...cleanups].reverse();
  cleanups.clear();
  if (pending.length > 0) console.error(`${why}: stopping what the bench started (Ctrl-C again to leave it running)`);
  for (const cleanup of pending) {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLEANUP_BOUND_MS)));
    try {
      await Promise.race([Promise.resolve().then(cleanup), bound]);
    } catch (err) {
      console.error(`clean-up failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
  process.exit(code);
}

/** A bench that hangs is worse than one that fails: give up after `ms`, whatever is going on. */
export function exitAfter(ms: number, what: string): void {
  setTimeout(() => {
    console.error(`${what}: gave up after ${Math.round(ms / 1000)} s`);
    void cleanUpAndExit(1, what);
  }, ms).unref();
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` gives a value; undefined when the time is up. */
export async function until<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs: number, everyMs = 100): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch {
      // Not there yet (a query before the first workflow task, a continue-as-new): try again.
    }
    if (Date.now() > deadline) return undefined;
    await sleep(everyMs);
  }
}

/** Nearest-rank percentile of unsorted numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Lifecycles completed per second while they were completing: (n − 1) over
 * the time from the first completion to the last. Dividing all n by the time
 * from the first start instead counts the last lifecycle's own length (its job,
 * its gaps) as time the system was slow, so a run of n lifecycles offered at
 * exactly r a second could never read r however fast the system was.
 */
export function completionRate(completedAt: number[]): number {
  if (completedAt.length < 2) return 0;
  const first = Math.min(...completedAt);
  const last = Math.max(...completedAt);
  return last > first ? ((completedAt.length - 1) * 1_000) / (last - first) : 0;
}

export const ms = (n: number): string => (Number.isFinite(n) ? `${Math.round(n)} ms` : 'n/a');
export const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export interface Figure {
  figure: string;
  value: string;
  target?: string;
  /** Undefined: informative only, no target. */
  met?: boolean;
}

/** The machine's 1/5/15-minute load average: figures from a busy machine say so next to them. */
export function loadAverage(): string {
  return loadavg().map((l) => l.toFixed(2)).join(' / ');
}

/**
 * How fast this machine runs plain JavaScript, measured once before the bench
 * starts: rounds per second of a fixed workload shaped like orchestration code
 * (objects built, serialised and parsed, sorted, looked up in a map). The
 * machines these benches run on differ from hour to hour and host to host by a
 * factor of two; a throughput figure read next to this one can be compared
 * with another taken on a different day.
 */
export function machineSpeed(slices = 5, sliceMs = 200): number {
  const items = Array.from({ length: 200 }, (_, i) => ({ name: `runner-${(i * 7919) % 1000}`, status: i % 3 === 0 ? 'idle' : 'running', seq: i, labels: ['self-hosted', 'linux', `pool-${i % 5}`] }));
  let best = 0;
  let sink = 0;
  // The best of a few short slices: a slice that another process interrupted says less about the machine.
  for (let slice = 0; slice < slices; slice++) {
    let rounds = 0;
    const started = performance.now();
    while (performance.now() - started < sliceMs) {
      const copy = JSON.parse(JSON.stringify(items)) as typeof items;
      copy.sort((a, b) => a.name.localeCompare(b.name));
      const byName = new Map(copy.map((item) => [item.name, item]));
      for (const item of items) sink += byName.get(item.name)?.seq ?? 0;
      rounds += 1;
    }
    best = Math.max(best, (rounds * 1000) / (performance.now() - started));
  }
  if (sink < 0) console.log(sink); // Keeps the work from being optimised away.
  return Math.round(best);
}

let speedBeforeBench: number | undefined;

/** Prints the figures as an aligned table; returns how many targets were missed. */
export function printTable(title: string, figures: Figure[]): number {
  figures = [
    ...figures,
    ...(speedBeforeBench !== undefined ? [{ figure: 'machine speed before the bench (fixed JS workload; compare runs by it)', value: `${speedBeforeBench} rounds/s` }] : []),
    { figure: 'load average (1 / 5 / 15 min) at the end', value: loadAverage() },
  ];
  const rows = figures.map((f) => [f.figure, f.value, f.target ?? '', f.met === undefined ? '' : f.met ? 'ok' : 'MISSED']);
  const header = ['figure', 'value', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(line(row));
  const missed = figures.filter((f) => f.met === false).length;
  console.log(missed === 0 ? '\nall targets met' : `\nMISSED ${missed} target${missed === 1 ? '' : 's'}`);
  return missed;
}

/**
 * Runs a bench's main; exits 0 when it finished (targets met or not), 1 when it broke. A bench that
 * breaks, in its main or in work nothing awaited, stops what it started as an interrupted one does.
 */
export function runBench(name: string, main: () => Promise<void>): void {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    // A second signal while cleaning up means "now": the operator has given up waiting.
    process.on(signal, () => (exiting ? process.exit(code) : void cleanUpAndExit(code, `${name}: ${signal}`)));
  }
  const failed = (err: unknown): void => {
    console.error(`${name} failed:`, err);
    void cleanUpAndExit(1, `${name}: failed`);
  };
  process.on('uncaughtException', failed);
  process.on('unhandledRejection', failed);
  speedBeforeBench = machineSpeed();
  main().then(() => process.exit(0), failed);
}
