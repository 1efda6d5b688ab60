/**
 * Where the machine's CPU goes during a bench, read from /proc: per process,
 * and inside a process per kind of thread (the JS main thread, the workflow
 * thread, the SDK's Rust core, V8's helpers), so "the orchestration costs
 * x core-seconds per lifecycle" names who spends them. Linux only; elsewhere
 * every figure is empty rather than wrong.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/** utime + stime of /proc/<pid>[/task/<tid>]/stat, in seconds. */
function cpuOfStat(path: string): { name: string; seconds: number } | undefined {
  try {
    const stat = readFileSync(path, 'utf8');
    // The name is in parentheses and may itself hold spaces or parentheses.
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    // Fields after the name start at field 3 (state): utime is field 14, stime 15.
    const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    return { name: stat.slice(open + 1, close), seconds };
  } catch {
    return undefined;
  }
}

/**
 * Node names nearly all of its threads "node", so threads are told apart by
 * what can be known: the main thread (tid = pid), the SDK's Rust core (tokio),
 * and the busiest of the rest, which in a worker is the thread that runs the
 * workflows (V8's GC and compiler helpers and libuv's pool are the others).
 */
function threadKinds(pid: number, threads: { tid: number; name: string; seconds: number }[]): Map<string, number> {
  const kinds = new Map<string, number>();
  const add = (kind: string, seconds: number) => kinds.set(kind, (kinds.get(kind) ?? 0) + seconds);
  const others = threads.filter((t) => t.tid !== pid && !/^tokio/.test(t.name)).sort((a, b) => b.seconds - a.seconds);
  for (const t of threads) {
    if (t.tid === pid) add('main thread', t.seconds);
    else if (/^tokio/.test(t.name)) add('SDK core (Rust, tokio)', t.seconds);
    else if (t === others[0]) add('busiest other thread (the workflow thread in a worker)', t.seconds);
    else add('other threads (V8 GC and compiler, libuv)', t.seconds);
  }
  return kinds;
}

export interface CpuSnapshot {
  /** Whole machine, busy seconds summed over every core. */
  machine: number;
  processes: Map<string, Map<string, number>>;
}

function machineBusySeconds(): number {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    const busy = cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]! + cpu[7]!;
    return busy / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

function processThreads(pid: number): Map<string, number> {
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return new Map();
  }
  const threads = tids.flatMap((tid) => {
    const thread = cpuOfStat(`/proc/${pid}/task/${tid}/stat`);
    return thread ? [{ tid: Number(tid), ...thread }] : [];
  });
  return threadKinds(pid, threads);
}

/** `processes`: a label per pid (this process, the worker, the API...). */
export function cpuSnapshot(processes: Record<string, number | undefined>): CpuSnapshot {
  const byLabel = new Map<string, Map<string, number>>();
  for (const [label, pid] of Object.entries(processes)) if (pid !== undefined) byLabel.set(label, processThreads(pid));
  return { machine: machineBusySeconds(), processes: byLabel };
}

export interface CpuRow {
  what: string;
  seconds: number;
}

/**
 * Core-seconds spent between two snapshots, per process and thread kind, and
 * "everything else" (the Temporal server and its database, on a quiet machine)
 * as the machine's busy time minus the labelled processes.
 */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): CpuRow[] {
  const rows: CpuRow[] = [];
  let labelled = 0;
  for (const [label, kinds] of after.processes) {
    const earlier = before.processes.get(label) ?? new Map<string, number>();
    let total = 0;
    const parts: CpuRow[] = [];
    for (const [kind, seconds] of kinds) {
      const spent = seconds - (earlier.get(kind) ?? 0);
      if (spent <= 0.005) continue;
      total += spent;
      parts.push({ what: `${label}: ${kind}`, seconds: spent });
    }
    labelled += total;
    rows.push({ what: label, seconds: total }, ...parts.sort((a, b) => b.seconds - a.seconds));
  }
  rows.push({ what: 'rest of the machine (Temporal server, its database)', seconds: Math.max(0, after.machine - before.machine - labelled) });
  rows.push({ what: 'whole machine', seconds: after.machine - before.machine });
  return rows;
}

/** Resident set size of another process, from /proc (bytes). */
export function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb) * 1024;
}
