/**
 * Where one job's time goes, read from the server's own event timestamps (no
 * instrumentation in the code under test):
 *
 *   GitHub queues the job (simulator's createdAt)
 *   → pool signalled      jobQueued signal event in the pool's history (webhook delivery + intake)
 *   → pool decides        the start command for the runner made for this job (pool workflow tasks):
 *                         a child-start, or the startRunners activity naming it
 *   → runner started      that runner's WorkflowExecutionStarted
 *   → create scheduled    its createInstance activity scheduled (the runner's first workflow task);
 *                         for an inline create (a local activity), that first task's start
 *   → create started      that activity started (activity dispatch to a worker; none when inline)
 *   → runner online       its runnerStatus signal (JIT config, provider, agent's idle callback), or
 *                         its jobStarted signal where that carried the agent's idle (api/idle-report-hold.ts)
 *   → job started         simulator's startedAt (GitHub hands the job to an idle runner)
 *
 * Pools count jobs rather than tie a job to a runner, so the runner "made for"
 * the k-th queued job is the k-th runner the pool started (FIFO). The jobs of
 * one batched signal share its time.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { SimJob } from '../github/simulator/sim-state';
import { runnerWorkflowId } from '../workflows/messages';
import { ms, percentile, type Figure } from './common';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export const eventMs = (e: HistoryEvent): number => {
  const t = e.eventTime;
  return t ? Number(String(t.seconds ?? 0)) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : NaN;
};

function payloadJson(data: Uint8Array | null | undefined): unknown {
  if (!data) return undefined;
  try {
    return JSON.parse(Buffer.from(data).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Every event of every run of a workflow id, oldest run first. */
export async function allRuns(client: Client, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: { runId: string; start: number }[] = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) runs.push({ runId: run.runId, start: run.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  const out: HistoryEvent[][] = [];
  for (const { runId } of runs) out.push((await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? []);
  return out;
}

export interface WorkflowTaskStats {
  tasks: number;
  scheduleToStart: number[];
  startToComplete: number[];
}

export function workflowTaskStats(events: HistoryEvent[]): WorkflowTaskStats {
  const scheduled = new Map<string, number>();
  const started = new Map<string, number>();
  const stats: WorkflowTaskStats = { tasks: 0, scheduleToStart: [], startToComplete: [] };
  for (const e of events) {
    const id = String(e.eventId);
    if (e.workflowTaskScheduledEventAttributes) scheduled.set(id, eventMs(e));
    const s = e.workflowTaskStartedEventAttributes;
    if (s) {
      started.set(id, eventMs(e));
      const at = scheduled.get(String(s.scheduledEventId));
      if (at !== undefined) stats.scheduleToStart.push(eventMs(e) - at);
    }
    const c = e.workflowTaskCompletedEventAttributes;
    if (c) {
      stats.tasks += 1;
      const at = started.get(String(c.startedEventId));
      if (at !== undefined) stats.startToComplete.push(eventMs(e) - at);
    }
  }
  return stats;
}

interface RunnerMarks {
  started: number;
  createScheduled: number;
  createStarted: number;
  online: number;
  /** The runner's history: its length, signals and workflow tasks. */
  events: number;
  signals: number;
  tasks: number;
}

async function runnerMarks(client: Client, name: string): Promise<RunnerMarks | undefined> {
  const events = (await client.workflow.getHandle(runnerWorkflowId(name)).fetchHistory()).events ?? [];
  const online = events.find((e) => ['runnerStatus', 'jobStarted'].includes(e.workflowExecutionSignaledEventAttributes?.signalName ?? ''));
  const activity = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'createInstance');
  // An inline create runs in the first workflow task: it begins when that task starts, with no dispatch.
  const createScheduled = activity ?? events.find((e) => e.workflowTaskStartedEventAttributes);
  const createStarted = activity ? events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(activity.eventId)) : createScheduled;
  if (!events[0] || !createScheduled || !createStarted || !online) return undefined;
  return {
    started: eventMs(events[0]),
    createScheduled: eventMs(createScheduled),
    createStarted: eventMs(createStarted),
    online: eventMs(online),
    events: events.length,
    signals: events.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
    tasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
  };
}

export interface JobPathBreakdown {
  stages: { stage: string; values: number[] }[];
  pool: WorkflowTaskStats & { events: number; runs: number; signals: number };
  /** Each sampled runner's history, in the order sampled. */
  runners: { events: number; signals: number; tasks: number }[];
}

/**
 * The breakdown for `sample` jobs (spread over the run) of one pool. Pool events
 * are read from every run of its history; runner events from each matched runner.
 */
export async function jobPathBreakdown(client: Client, poolWorkflowId: string, jobs: SimJob[], sample: number): Promise<JobPathBreakdown> {
  const runs = await allRuns(client, poolWorkflowId);
  const events = runs.flat();
  const signalledAt = new Map<number, number>();
  const childOrder: { name: string; at: number }[] = [];
  let signals = 0;
  for (const e of events) {
    const sig = e.workflowExecutionSignaledEventAttributes;
    if (sig) {
      signals += 1;
      const input = payloadJson(sig.input?.payloads?.[0]?.data);
      const queued = sig.signalName === 'jobQueued' ? [input] : sig.signalName === 'jobsQueued' ? ((input as { jobs?: unknown[] } | undefined)?.jobs ?? []) : [];
      for (const job of queued) {
        const id = (job as { jobId?: number } | undefined)?.jobId;
        if (typeof id === 'number' && !signalledAt.has(id)) signalledAt.set(id, eventMs(e));
      }
    }
    // Runners are started as children (before) or by a startRunners activity, named in its input.
    const child = e.startChildWorkflowExecutionInitiatedEventAttributes;
    if (child?.workflowId) childOrder.push({ name: child.workflowId.replace(/^runner\//, ''), at: eventMs(e) });
    const activity = e.activityTaskScheduledEventAttributes;
    if (activity?.activityType?.name === 'startRunners') {
      const runners = (payloadJson(activity.input?.payloads?.[0]?.data) as { runners?: { name: string }[] } | undefined)?.runners ?? [];
      for (const r of runners) childOrder.push({ name: r.name, at: eventMs(e) });
    }
  }
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const queuedOrder = [...signalledAt.entries()].sort((a, b) => a[1] - b[1]).map(([id]) => id).filter((id) => byId.has(id));
  const stages = ['job queued → pool signalled', 'pool signalled → pool decides', 'pool decides → runner workflow started', 'runner started → create scheduled (its first workflow task)', 'create scheduled → create started (activity dispatch; 0 inline)', 'create started → runner online', 'runner online → job started', 'total (queued → started)'].map((stage) => ({ stage, values: [] as number[] }));
  const runners: JobPathBreakdown['runners'] = [];
  const step = Math.max(1, Math.floor(queuedOrder.length / sample));
  for (let k = 0; k < queuedOrder.length && k < childOrder.length; k += step) {
    const job = byId.get(queuedOrder[k]!)!;
    const child = childOrder[k]!;
    const marks = await runnerMarks(client, child.name).catch(() => undefined);
    const ranOn = job.runnerName ? await runnerMarks(client, job.runnerName).catch(() => undefined) : undefined;
    if (!marks || !job.startedAt) continue;
    runners.push({ events: marks.events, signals: marks.signals, tasks: marks.tasks });
    const created = Date.parse(job.createdAt);
    const signalled = signalledAt.get(job.id)!;
    const values = [signalled - created, child.at - signalled, marks.started - child.at, marks.createScheduled - marks.started, marks.createStarted - marks.createScheduled, marks.online - marks.createStarted, Date.parse(job.startedAt) - (ranOn ?? marks).online, Date.parse(job.startedAt) - created];
    values.forEach((v, i) => stages[i]!.values.push(v));
  }
  return { stages, pool: { ...workflowTaskStats(events), events: events.length, runs: runs.length, signals }, runners };
}

export function breakdownFigures(b: JobPathBreakdown): Figure[] {
  const n = b.stages[0]?.values.length ?? 0;
  return [
    ...b.stages.map((s) => ({ figure: `path: ${s.stage} (p50 / p95)`, value: `${ms(percentile(s.values, 50))} / ${ms(percentile(s.values, 95))}` })),
    { figure: 'path: jobs sampled', value: String(n) },
    { figure: 'pool: runs / events / signals / workflow tasks', value: `${b.pool.runs} / ${b.pool.events} / ${b.pool.signals} / ${b.pool.tasks}` },
    { figure: 'a runner (mean of those sampled): events / signals / workflow tasks', value: (['events', 'signals', 'tasks'] as const).map((k) => mean(b.runners.map((r) => r[k]))).join(' / ') },
    { figure: 'pool task: scheduled → started (p50 / p95)', value: `${ms(percentile(b.pool.scheduleToStart, 50))} / ${ms(percentile(b.pool.scheduleToStart, 95))}` },
    { figure: 'pool task: started → completed (p50 / p95)', value: `${ms(percentile(b.pool.startToComplete, 50))} / ${ms(percentile(b.pool.startToComplete, 95))}` },
  ];
}

function mean(values: number[]): string {
  return values.length === 0 ? 'n/a' : (values.reduce((a, b) => a + b, 0) / values.length).toFixed(1);
}
