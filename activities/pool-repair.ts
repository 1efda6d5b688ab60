/**
 * Pools stuck on a nondeterminism error, reset to the workflow task that made the commands
 * their history no longer replays.
 *
 * How a pool gets there with its code unchanged: a query that waited for a worker (one
 * restarting, or one whose pollers were all busy) reaches it with the history as it is when the
 * worker polls, and the SDK applies the signals that came in the meantime to answer it. The pool
 * decides on them there, and again on the signals that come before its next workflow task, which
 * completes with both decisions' commands. Replayed, all those signals arrive in one activation
 * and make one decision: the history no longer replays, every worker that takes the pool fails
 * its task, and the pool starts no runner again (docs/self-healing.md tells how this was
 * reproduced).
 *
 * The repair resets the pool to the task that made the commands, reapplying the signals that
 * came after it; the new run decides once on all of them. Runners started by the dropped
 * commands are not lost to it: their reports are among the signals reapplied, and a pool counts
 * a runner it hears from.
 *
 * When to reset. A failure the code that wrote the history cannot replay never heals by itself,
 * so waiting only costs the pool's jobs: such a pool is reset as soon as it is seen, when the
 * build that completed the task is the only one polling the pool's task queue. Any other build
 * among the pollers may be a rolling deploy whose new code meets the old history (a reset would
 * not mend that, and old workers may yet run the task), so then the failures must first have
 * lasted `stuckAfterMs`.
 */
import { randomUUID } from 'node:crypto';
import { log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { taskQueuePollers, type Poller } from '../api/temporal/pollers';
import { quote } from '../api/temporal/visibility';
import { eachConcurrently } from '../domain/concurrency';
import { reportErrorText } from './failures';
import { RUNNER_POOL_WORKFLOW } from '../workflows/pool-messages';
import { RUNNER_POOL } from '../workflows/search-attributes';

const { EventType, WorkflowTaskFailedCause, ResetReapplyType } = proto.temporal.api.enums.v1;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

export interface PoolRepair {
  pool: string;
  /** The workflow task completed event the pool was reset to. */
  resetTo: number;
  /** The error its tasks failed with. */
  cause: string;
}

export interface PoolRepairDeps {
  client: Client;
  namespace: string;
  /** How long a pool's tasks must have been failing on nondeterminism before it is reset. */
  stuckAfterMs: number;
}

/** Newest events read per pool: a stuck pool's failed tasks are among them, however many signals came since. */
const EVENTS_READ = 100;
const POOLS_AT_ONCE = 8;

const isTaskOutcome = (e: HistoryEvent): boolean =>
  e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED || e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;

const eventMs = (e: HistoryEvent): number => {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1_000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
};

/** A run of failed workflow tasks on a nondeterminism error, newest outcome first, and when it began. */
export interface NondeterminismStreak {
  cause: string;
  sinceMs: number;
}

/**
 * The nondeterminism failure a pool's tasks are failing with, or undefined: the newest task
 * outcome in its history is that failure, and no task has completed since.
 */
export function nondeterminismStreak(newestFirst: readonly HistoryEvent[]): NondeterminismStreak | undefined {
  const outcome = newestFirst.find(isTaskOutcome);
  const failed = outcome?.workflowTaskFailedEventAttributes;
  if (!outcome || !failed || failed.cause !== WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR) return undefined;
  // The first failure of the streak says how long it has lasted.
  let first = outcome;
  for (const e of newestFirst.slice(newestFirst.indexOf(outcome) + 1)) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) break;
    if (e.workflowTaskFailedEventAttributes?.cause === WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR) first = e;
  }
  return { cause: failed.failure?.message ?? 'nondeterminism error', sinceMs: eventMs(first) };
}

/**
 * Whether the build that completed `point` is the only one polling for workflow tasks: then the
 * code that wrote the commands is the code that cannot replay them, and no other will come.
 * `pollers` are those the server has seen lately (minutes), so a deploy's old workers still count.
 */
export function writtenByTheOnlyBuild(point: HistoryEvent, pollers: readonly Pick<Poller, 'buildId'>[]): boolean {
  const writer = point.workflowTaskCompletedEventAttributes?.workerVersion?.buildId;
  return !!writer && pollers.length > 0 && pollers.every((p) => p.buildId === writer);
}

/**
 * The workflow task completed event to reset to: the one whose commands made the event the
 * error names, else the last task completed. The SDK names it two ways: `HistoryEvent(id: N, ...)`
 * and, when a command of another kind stands where the event's should (a child workflow for a
 * scheduled activity), `HistoryEvent { event_id: N, ... }`. Missing the second, a reset went to the
 * last task completed, after the event, and the reset run failed on it again, pass after pass.
 */
export function resetPoint(history: readonly HistoryEvent[], cause: string): HistoryEvent | undefined {
  const named = /HistoryEvent(?:\(id: | \{ event_id: )(\d+)/.exec(cause);
  const before = named ? Number(named[1]) : Infinity;
  let point: HistoryEvent | undefined;
  for (const e of history) {
    if (Number(e.eventId ?? 0) >= before) break;
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) point = e;
  }
  return point;
}

/** Looks at every running pool of the provider and resets those stuck on nondeterminism. */
export async function repairStuckPools(deps: PoolRepairDeps, provider: string, report: { repaired: PoolRepair[]; failed: { target: string; error: string }[] }): Promise<void> {
  const { client, namespace } = deps;
  const pools: { name: string; workflowId: string; runId: string }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowType = ${quote(RUNNER_POOL_WORKFLOW)} AND ExecutionStatus = 'Running'` })) {
    if ((info.memo as { provider?: unknown } | undefined)?.provider !== provider) continue;
    pools.push({ name: info.typedSearchAttributes.get(RUNNER_POOL) ?? info.workflowId, workflowId: info.workflowId, runId: info.runId });
  }
  // One look at a task queue's pollers per pass, shared by its pools.
  const pollersOf = new Map<string, Promise<Poller[]>>();
  const pollers = (taskQueue: string) => {
    let seen = pollersOf.get(taskQueue);
    if (!seen) {
      seen = taskQueuePollers(client, taskQueue).then((all) => all.filter((p) => p.kind === 'workflow'));
      pollersOf.set(taskQueue, seen);
    }
    return seen;
  };
  await eachConcurrently(pools, POOLS_AT_ONCE, async (pool) => {
    try {
      const execution = { workflowId: pool.workflowId, runId: pool.runId };
      const newest = await client.workflowService.getWorkflowExecutionHistoryReverse({ namespace, execution, maximumPageSize: EVENTS_READ });
      const streak = nondeterminismStreak(newest.history?.events ?? []);
      if (!streak) return;
      const lastedLongEnough = Date.now() - streak.sinceMs >= deps.stuckAfterMs;
      const { cause } = streak;
      const history = await client.workflow.getHandle(pool.workflowId, pool.runId).fetchHistory();
      const events = history.events ?? [];
      const point = resetPoint(events, cause);
      if (!lastedLongEnough) {
        const taskQueue = events[0]?.workflowExecutionStartedEventAttributes?.taskQueue?.name;
        if (!point || !taskQueue || !writtenByTheOnlyBuild(point, await pollers(taskQueue))) return;
      }
      if (!point?.eventId) {
        report.failed.push({ target: pool.workflowId, error: `stuck on a nondeterminism error, and no completed workflow task to reset to: ${reportErrorText(cause, 200)}` });
        return;
      }
      // Only the run that was found stuck: a reset of a run that has been reset since would end its successor.
      const current = await client.workflow.getHandle(pool.workflowId).describe();
      if (current.runId !== pool.runId || current.status.name !== 'RUNNING') return;
      await client.workflowService.resetWorkflowExecution({
        namespace,
        workflowExecution: execution,
        workflowTaskFinishEventId: point.eventId,
        reason: `runnerflow liveness: workflow tasks failing on a nondeterminism error (${reportErrorText(cause, 200)})`,
        resetReapplyType: ResetReapplyType.RESET_REAPPLY_TYPE_SIGNAL,
        requestId: randomUUID(),
      });
      const resetTo = Number(point.eventId);
      report.repaired.push({ pool: pool.name, resetTo, cause: reportErrorText(cause) });
      log.warn('pool stuck on a nondeterminism error reset to the task that made the commands it no longer replays', {
        pool: pool.name,
        resetTo,
        cause,
        // Why now: the failures outlasted the wait, or the code that wrote the commands is all there is.
        failingForMs: Date.now() - streak.sinceMs,
      });
    } catch (err) {
      report.failed.push({ target: pool.workflowId, error: reportErrorText(err) });
    }
  });
}
