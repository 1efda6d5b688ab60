/**
 * Linux process inspection through /proc, so a runner started by an earlier
 * worker process can be found, checked and stopped by a later one.
 */
import { readFileSync, readdirSync } from 'node:fs';

interface ProcStat {
  state: string;
  ppid: number;
  /** Start time in clock ticks since boot: with the pid, identifies one process even after pid reuse. */
  startTicks: string;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses; fields after it are fixed.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '?', ppid: Number(fields[1]), startTicks: fields[19] ?? '' };
}

export function processStartTicks(pid: number): string | undefined {
  return readStat(pid)?.startTicks;
}

/** Alive and still the process we started (not a zombie, not a reused pid). */
export function isRunning(pid: number, startTicks?: string): boolean {
  const stat = readStat(pid);
  if (!stat || stat.state === 'Z' || stat.state === 'X') return false;
  return startTicks === undefined || stat.startTicks === startTicks;
}

/** Every live descendant of pid, found by walking parent links (children may have left the process group). */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (!stat) continue;
    children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), Number(entry)]);
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

interface TreeMember {
  pid: number;
  startTicks: string | undefined;
}

function member(pid: number): TreeMember {
  return { pid, startTicks: processStartTicks(pid) };
}

/** Signals the group and each member still being the process it was when found (pids get reused). */
function signalAll(pgid: number, members: TreeMember[], signal: NodeJS.Signals): void {
  const attempts = [() => process.kill(-pgid, signal), ...members.filter((m) => isRunning(m.pid, m.startTicks)).map((m) => () => process.kill(m.pid, signal))];
  for (const attempt of attempts) {
    try {
      attempt();
    } catch {
      // Gone already.
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stops the process group led by pid and every descendant: SIGTERM, then SIGKILL
 * after stopTimeoutMs (at once when the signal aborts).
 */
export async function stopProcessTree(pid: number, startTicks: string | undefined, stopTimeoutMs: number, signal?: AbortSignal): Promise<void> {
  if (!isRunning(pid, startTicks)) return;
  const tree = [{ pid, startTicks }, ...descendants(pid).map(member)];
  const alive = () => tree.filter((m) => isRunning(m.pid, m.startTicks));
  signalAll(pid, tree, 'SIGTERM');
  const deadline = Date.now() + stopTimeoutMs;
  while (alive().length > 0 && Date.now() < deadline && !signal?.aborted) await sleep(50);
  if (alive().length > 0) {
    // Children forked after the first look are caught here too.
    const late = isRunning(pid, startTicks) ? descendants(pid).map(member) : [];
    tree.push(...late);
    signalAll(pid, tree, 'SIGKILL');
    const killDeadline = Date.now() + 5000;
    while (alive().length > 0 && Date.now() < killDeadline) await sleep(25);
  }
}
