import { Context, type Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from './failures';

/** Give up this long before Temporal would time the attempt out, so the workflow hears of it at once. */
const DEADLINE_MARGIN_MS = 100;

/**
 * When this attempt must be over: the earlier of its start-to-close and (for a
 * single bounded attempt, as a forced delete makes) its schedule-to-close limit.
 */
function attemptDeadline(info: Info, now: number): number | undefined {
  const limits: number[] = [];
  if (info.startToCloseTimeoutMs > 0) limits.push(now + info.startToCloseTimeoutMs);
  if (info.scheduleToCloseTimeoutMs > 0) limits.push(info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs);
  return limits.length > 0 ? Math.min(...limits) - DEADLINE_MARGIN_MS : undefined;
}

/**
 * Runs `work` while heartbeating, with a signal that aborts on cancellation (a
 * forced delete reaches a running activity through its heartbeats) and at the
 * attempt's deadline. The server enforces timeouts only with some delay, and a
 * provider may ignore the signal, so the work is also raced against the deadline:
 * a forced delete's one bounded attempt really ends within its bound.
 */
export async function whileHeartbeating<T>(work: (signal: AbortSignal) => Promise<T>, options: { boundMs?: number; heartbeatDetails?: () => unknown } = {}): Promise<T> {
  const ctx = Context.current();
  const controller = new AbortController();
  const onCancel = () => controller.abort(ctx.cancellationSignal.reason);
  ctx.cancellationSignal.addEventListener('abort', onCancel);

  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  const everyMs = timeoutMs ? Math.max(100, Math.floor(timeoutMs / 3)) : 1_000;
  // The first heartbeat waits one interval: the server times a silent attempt out only after the
  // whole heartbeat timeout, and most provider calls finish long before, so they cost no heartbeat
  // at all (each is a round trip and a write to the workflow's state on the server).
  // A local activity has no heartbeats: the worker running it cancels it directly.
  // Each heartbeat replaces the details the server keeps for the next attempt, so they go with every one.
  const heartbeat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(options.heartbeatDetails?.()), everyMs);

  let expiry: NodeJS.Timeout | undefined;
  const now = Date.now();
  const limit = attemptDeadline(ctx.info, now);
  const deadline = options.boundMs === undefined ? limit : Math.min(limit ?? Infinity, now + options.boundMs);
  const expired =
    deadline === undefined
      ? undefined
      : new Promise<never>((_, reject) => {
          expiry = setTimeout(() => {
            const failure = ApplicationFailure.create({ type: FAILURE_TYPES.attemptDeadline, message: 'gave up at the end of the attempt time limit' });
            controller.abort(failure);
            reject(failure);
          }, Math.max(0, deadline - Date.now()));
        });
  try {
    const running = work(controller.signal);
    return await (expired ? Promise.race([running, expired]) : running);
  } finally {
    clearInterval(heartbeat);
    clearTimeout(expiry);
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
  }
}
