/**
 * The demo, told as it happens: runners created (and how long that took), online,
 * taking a job, leaving, removed; jobs queued, started (with their queue time)
 * and finished; and a one-line summary every few seconds while it changes, once
 * a minute while it does not.
 *
 * It watches what is cheap to watch: the simulator's job records (in process)
 * and the demo pool's state query, once a second. On a terminal the events are
 * human lines; for machines (JSON logs) they are structured `demo` events.
 */
import type { Client } from '@temporalio/client';
import type { InstanceStatus, RunnerStatus } from '../domain/instance-status';
import type { LogFormat, RootLogger } from '../observability/logger';
import { runnerWorkflowId, stateQuery } from '../workflows/messages';
import { poolStateQuery, poolWorkflowId, type PoolRunnerView } from '../workflows/pool-messages';

/** What the story needs of a job (the simulator's SimJob fits). */
export interface StoryJob {
  id: number;
  name: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion?: string | null;
  runnerName?: string;
  createdAt: string;
  startedAt?: string;
  completedAt?: string;
}

export type StoryEvent =
  | { kind: 'job_queued'; job: string; jobId: number }
  | { kind: 'job_started'; job: string; jobId: number; runner?: string; queueSeconds?: number }
  | { kind: 'job_finished'; job: string; jobId: number; conclusion?: string; runSeconds?: number }
  | { kind: 'runner_requested'; runner: string }
  | { kind: 'runner_created'; runner: string; createSeconds?: number }
  | { kind: 'runner_online'; runner: string }
  | { kind: 'runner_took_job'; runner: string; jobId: number }
  | { kind: 'runner_leaving'; runner: string; status: InstanceStatus }
  | { kind: 'runner_removed'; runner: string }
  | { kind: 'summary'; runners: Record<string, number>; jobs: { queued: number; running: number; done: number }; p50QueueSeconds?: number };

interface RunnerSeen {
  status: InstanceStatus;
  runnerStatus: RunnerStatus;
  jobId?: number;
}

const seconds = (fromIso: string | undefined, toIso: string | undefined): number | undefined => {
  const from = Date.parse(fromIso ?? '');
  const to = Date.parse(toIso ?? '');
  return Number.isNaN(from) || Number.isNaN(to) ? undefined : Math.max(0, (to - from) / 1000);
};

const LEAVING: InstanceStatus[] = ['pending_delete', 'pending_force_delete', 'deleting'];

/** Where a runner stands, as the summary counts it. */
export function runnerPhase(r: { status: InstanceStatus; runnerStatus: RunnerStatus }): string {
  if (LEAVING.includes(r.status)) return 'leaving';
  if (r.status === 'error') return 'error';
  if (r.runnerStatus === 'active') return 'busy';
  if (r.runnerStatus === 'idle') return 'idle';
  return r.status === 'running' ? 'starting' : 'creating';
}

export function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Turns successive snapshots into events. Pure: the poller feeds it, tests can too.
 * `createSeconds` is looked up by the caller when a runner is first seen created.
 */
export class StoryBook {
  private readonly jobs = new Map<number, StoryJob['status']>();
  private readonly runners = new Map<string, RunnerSeen>();
  private readonly queueSeconds: number[] = [];
  private latestRunners: PoolRunnerView[] = [];

  jobEvents(jobs: StoryJob[]): StoryEvent[] {
    const events: StoryEvent[] = [];
    for (const job of jobs) {
      const before = this.jobs.get(job.id);
      if (before === job.status) continue;
      this.jobs.set(job.id, job.status);
      if (before === undefined) events.push({ kind: 'job_queued', job: job.name, jobId: job.id });
      if (job.status !== 'queued' && before !== 'in_progress') {
        const queueSeconds = seconds(job.createdAt, job.startedAt);
        if (queueSeconds !== undefined) this.queueSeconds.push(queueSeconds);
        events.push({ kind: 'job_started', job: job.name, jobId: job.id, ...(job.runnerName ? { runner: job.runnerName } : {}), ...(queueSeconds !== undefined ? { queueSeconds } : {}) });
      }
      if (job.status === 'completed') {
        const runSeconds = seconds(job.startedAt, job.completedAt);
        events.push({ kind: 'job_finished', job: job.name, jobId: job.id, ...(job.conclusion ? { conclusion: job.conclusion } : {}), ...(runSeconds !== undefined ? { runSeconds } : {}) });
      }
    }
    return events;
  }

  /** Runner events; `created` lists runners that just reached `running`, for the caller to time. */
  runnerEvents(runners: PoolRunnerView[]): { events: StoryEvent[]; created: string[] } {
    this.latestRunners = runners;
    const events: StoryEvent[] = [];
    const created: string[] = [];
    const present = new Set<string>();
    for (const r of runners) {
      present.add(r.name);
      const before = this.runners.get(r.name);
      this.runners.set(r.name, { status: r.status, runnerStatus: r.runnerStatus, ...(r.jobId !== undefined ? { jobId: r.jobId } : {}) });
      if (!before) events.push({ kind: 'runner_requested', runner: r.name });
      const wasUp = before && before.status !== 'pending_create' && before.status !== 'creating';
      if (!wasUp && r.status !== 'pending_create' && r.status !== 'creating' && !LEAVING.includes(r.status)) created.push(r.name);
      if (r.runnerStatus === 'idle' && before?.runnerStatus !== 'idle' && before?.runnerStatus !== 'active') events.push({ kind: 'runner_online', runner: r.name });
      if (r.runnerStatus === 'active' && r.jobId !== undefined && before?.jobId !== r.jobId) events.push({ kind: 'runner_took_job', runner: r.name, jobId: r.jobId });
      if (LEAVING.includes(r.status) && !(before && LEAVING.includes(before.status))) events.push({ kind: 'runner_leaving', runner: r.name, status: r.status });
    }
    for (const name of [...this.runners.keys()]) {
      if (present.has(name)) continue;
      this.runners.delete(name);
      events.push({ kind: 'runner_removed', runner: name });
    }
    return { events, created };
  }

  summary(): StoryEvent {
    const runners: Record<string, number> = {};
    for (const r of this.latestRunners) runners[runnerPhase(r)] = (runners[runnerPhase(r)] ?? 0) + 1;
    const statuses = [...this.jobs.values()];
    const count = (s: StoryJob['status']) => statuses.filter((x) => x === s).length;
    const p50 = median(this.queueSeconds);
    return { kind: 'summary', runners, jobs: { queued: count('queued'), running: count('in_progress'), done: count('completed') }, ...(p50 !== undefined ? { p50QueueSeconds: p50 } : {}) };
  }
}

const s1 = (n: number | undefined): string => (n === undefined ? '?' : `${n.toFixed(1)} s`);

/** One human line per event. */
export function storyLine(e: StoryEvent): string {
  switch (e.kind) {
    case 'job_queued':
      return `job ${e.job} (#${e.jobId}) queued`;
    case 'job_started':
      return `job ${e.job} started${e.runner ? ` on ${e.runner}` : ''} after ${s1(e.queueSeconds)} in the queue`;
    case 'job_finished':
      return `job ${e.job} finished: ${e.conclusion ?? 'done'} (ran ${s1(e.runSeconds)})`;
    case 'runner_requested':
      return `runner ${e.runner} requested`;
    case 'runner_created':
      return `runner ${e.runner} created${e.createSeconds !== undefined ? ` in ${s1(e.createSeconds)}` : ''}`;
    case 'runner_online':
      return `runner ${e.runner} online, waiting for a job`;
    case 'runner_took_job':
      return `runner ${e.runner} took job #${e.jobId}`;
    case 'runner_leaving':
      return `runner ${e.runner} leaving (${e.status})`;
    case 'runner_removed':
      return `runner ${e.runner} removed`;
    case 'summary': {
      const runners = Object.entries(e.runners).map(([phase, n]) => `${n} ${phase}`).join(', ') || 'none';
      return `── runners: ${runners} │ jobs: ${e.jobs.queued} queued, ${e.jobs.running} running, ${e.jobs.done} done │ p50 queue-to-start ${s1(e.p50QueueSeconds)}`;
    }
  }
}

export interface DemoStoryOptions {
  client: Client;
  pool: string;
  jobs: () => StoryJob[];
  emit: (event: StoryEvent) => void;
  pollMs?: number;
  summaryEveryMs?: number;
  /** A summary that says what the last one said waits this long (default a minute): a quiet demo does not repeat itself every few seconds. */
  unchangedSummaryEveryMs?: number;
}

/**
 * Whether a summary is worth a line: it says something new, or the last one is old
 * enough that a reader may wonder whether the demo is still running.
 */
export function summaryGate(unchangedEveryMs: number): (summary: StoryEvent, now: number) => boolean {
  let last: { said: string; at: number } | undefined;
  return (summary, now) => {
    const said = JSON.stringify(summary);
    if (last && last.said === said && now - last.at < unchangedEveryMs) return false;
    last = { said, at: now };
    return true;
  };
}

/** How long a runner took from `creating` to `running`, from its own transitions. */
async function createSeconds(client: Client, runner: string): Promise<number | undefined> {
  try {
    const state = await client.workflow.getHandle(runnerWorkflowId(runner)).query(stateQuery);
    const at = (to: string) => state.transitions.find((t) => t.to === to)?.at;
    return seconds(at('creating'), at('running'));
  } catch {
    return undefined;
  }
}

/**
 * The order things happen in a job's life. One look sees several steps at once (at a
 * poll a second, a runner created, online and busy, and its job started): told in this
 * order, a runner is created before a job starts on it, whichever snapshot noticed what.
 */
const TELLING_ORDER: Record<Exclude<StoryEvent['kind'], 'summary'>, number> = {
  job_queued: 0,
  runner_requested: 1,
  runner_created: 2,
  runner_online: 3,
  runner_took_job: 4,
  job_started: 5,
  job_finished: 6,
  runner_leaving: 7,
  runner_removed: 8,
};

/** One look's events in the order they happened (stable within a kind). */
export function inTellingOrder(events: StoryEvent[]): StoryEvent[] {
  const rank = (e: StoryEvent) => (e.kind === 'summary' ? Number.MAX_SAFE_INTEGER : TELLING_ORDER[e.kind]);
  return events.map((e, i) => ({ e, i })).sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i).map(({ e }) => e);
}

/** Starts telling; the returned function stops it. */
export function startDemoStory(options: DemoStoryOptions): () => void {
  const book = new StoryBook();
  const pool = options.client.workflow.getHandle(poolWorkflowId(options.pool));
  let stopped = false;
  let busy = false;
  const tick = async (): Promise<void> => {
    if (busy || stopped) return;
    busy = true;
    try {
      const told = book.jobEvents(options.jobs());
      const view = await pool.query(poolStateQuery).catch(() => undefined);
      if (view && !stopped) {
        const { events, created } = book.runnerEvents(view.runners);
        const timings = await Promise.all(created.map((name) => createSeconds(options.client, name)));
        told.push(...events, ...created.map((runner, i): StoryEvent => ({ kind: 'runner_created', runner, ...(timings[i] !== undefined ? { createSeconds: timings[i] } : {}) })));
      }
      if (!stopped) for (const e of inTellingOrder(told)) options.emit(e);
    } finally {
      busy = false;
    }
  };
  const poll = setInterval(() => void tick(), options.pollMs ?? 1_000);
  const worthTelling = summaryGate(options.unchangedSummaryEveryMs ?? 60_000);
  const summary = setInterval(() => {
    const line = book.summary();
    if (worthTelling(line, Date.now())) options.emit(line);
  }, options.summaryEveryMs ?? 5_000);
  void tick();
  return () => {
    stopped = true;
    clearInterval(poll);
    clearInterval(summary);
  };
}

/**
 * Where the story goes: human lines on stdout for a terminal; for JSON logs,
 * one `demo` event per line through the logger (message = the human line, `event` = its kind).
 */
export function storyEmitter(format: LogFormat, logger: RootLogger, write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): (e: StoryEvent) => void {
  if (format === 'pretty') return (e) => write(`runnerflow: ${storyLine(e)}`);
  return (e) => {
    const { kind, ...fields } = e;
    logger.info(storyLine(e), { event: kind, ...fields });
  };
}

/** The API's logger during the demo: on a terminal the story says what its info lines would, so only warnings show. */
export function demoApiLogger(format: LogFormat, root: RootLogger): RootLogger {
  const api = root.child({ component: 'api' });
  if (format === 'pretty') api.pino.level = 'warn';
  return api;
}
