/**
 * Linux process inspection through /proc, so a runner started by an earlier
 * worker process can be found, checked and stopped by a later one.
 */
import { readFileSync, readdirSync } from 'node:fs';

interface ProcStat {
  state: string;
  ppid: number;
  pgrp: number;
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
  return { state: fields[0] ?? '?', ppid: Number(fields[1]), pgrp: Number(fields[2]), startTicks: fields[19] ?? '' };
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

function allProcesses(): { pid: number; stat: ProcStat }[] {
  const out: { pid: number; stat: ProcStat }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat) out.push({ pid: Number(entry), stat });
  }
  return out;
}

/** Every live descendant of pid, found by walking parent links (children may have left the process group). */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const { pid: child, stat } of allProcesses()) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), child]);
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

/**
 * The live members of the process group led by `leader`, which may have exited.
 * The kernel hands out no pid still in use as a process group id, so another
 * process at the leader's pid means our group is gone and any group under that
 * id is someone else's. With nobody at that pid, the members found are ours
 * unless, after ours emptied, another group formed under the number and its own
 * leader left too, which takes the pid space to wrap within one runner's life.
 */
function groupMembers(leader: number, leaderStartTicks: string | undefined): TreeMember[] {
  const holder = readStat(leader);
  if (holder && leaderStartTicks !== undefined && holder.startTicks !== leaderStartTicks) return [];
  return allProcesses()
    .filter(({ stat }) => stat.pgrp === leader && stat.state !== 'Z' && stat.state !== 'X')
    .map(({ pid, stat }) => ({ pid, startTicks: stat.startTicks }));
}

/** Signals the group and each member still being the process it was when found (pids get reused). */
function signalAll(pgid: number | undefined, members: TreeMember[], signal: NodeJS.Signals): void {
  const group = pgid === undefined ? [] : [() => process.kill(-pgid, signal)];
  const attempts = [...group, ...members.filter((m) => isRunning(m.pid, m.startTicks)).map((m) => () => process.kill(m.pid, signal))];
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
 * after stopTimeoutMs (at once when the signal aborts). A leader that already
 * exited still leaves its group behind: what a job started in the background
 * outlives the shell that ran it.
 */
export async function stopProcessTree(pid: number, startTicks: string | undefined, stopTimeoutMs: number, signal?: AbortSignal): Promise<void> {
  const found = (): TreeMember[] => {
    const leaderAlive = isRunning(pid, startTicks);
    const members = [...(leaderAlive ? [{ pid, startTicks }, ...descendants(pid).map(member)] : []), ...groupMembers(pid, startTicks)];
    return members.filter((m, i) => members.findIndex((o) => o.pid === m.pid) === i);
  };
  const tree = found();
  if (tree.length === 0) return;
  const alive = () => tree.filter((m) => isRunning(m.pid, m.startTicks));
  // Once our group has emptied, its id may be handed to another one.
  const group = () => (isRunning(pid, startTicks) || groupMembers(pid, startTicks).length > 0 ? pid : undefined);
  signalAll(group(), tree, 'SIGTERM');
  const deadline = Date.now() + stopTimeoutMs;
  while (alive().length > 0 && Date.now() < deadline && !signal?.aborted) await sleep(50);
  if (alive().length > 0) {
    // Children forked after the first look are caught here too.
    tree.push(...found().filter((m) => !tree.some((t) => t.pid === m.pid)));
    signalAll(group(), tree, 'SIGKILL');
    const killDeadline = Date.now() + 5000;
    while (alive().length > 0 && Date.now() < killDeadline) await sleep(25);
  }
}
