import { Context } from '@temporalio/activity';

/**
 * Runs `work` while heartbeating. Heartbeats are how a cancellation (a forced
 * delete) reaches a running activity, so provider calls that may hang always run
 * inside this and receive the activity's abort signal.
 */
export async function whileHeartbeating<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  const everyMs = timeoutMs ? Math.max(100, Math.floor(timeoutMs / 3)) : 1_000;
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), everyMs);
  try {
    return await work(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
