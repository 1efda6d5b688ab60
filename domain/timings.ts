import { z } from 'zod';
import { durationMs } from './duration';

/**
 * Every duration the instance lifecycle uses. Defaults are production values
 * (GARM's delete backoff, ARC's registration timeout); tests shrink them so a
 * five-minute backoff runs in seconds.
 */
export interface InstanceTimings {
  /** Bound for one provider create attempt (also bounded by the bootstrap timeout). */
  createAttemptTimeoutMs: number;
  createMaxAttempts: number;
  createInitialIntervalMs: number;
  createMaxIntervalMs: number;
  /** GARM: 1 s doubling, capped at 5 minutes, retried until it succeeds. */
  deleteInitialIntervalMs: number;
  deleteBackoffCoefficient: number;
  deleteMaxIntervalMs: number;
  deleteAttemptTimeoutMs: number;
  /** Backoff for GitHub calls that failed for reasons other than a rate limit. */
  githubInitialIntervalMs: number;
  githubMaxIntervalMs: number;
  githubAttemptTimeoutMs: number;
  /**
   * How long a forced delete waits for the provider to confirm before handing the
   * machine to its clean-up workflow (which retries until it is gone) and closing.
   */
  forceDeleteAttemptTimeoutMs: number;
  /** How often a busy non-ephemeral runner is asked again to unregister. */
  busyRetryIntervalMs: number;
  /** Activities heartbeat so cancellation (force delete) reaches them quickly. */
  heartbeatTimeoutMs: number;
  /** A pool whose runners keep failing to bootstrap waits this long (doubling) before creating more. */
  poolCreateBackoffInitialMs: number;
  poolCreateBackoffMaxMs: number;
  /** GitHub cancels a job queued for 24 h; a queued job whose later events were lost stops counting as demand then. */
  queuedJobTtlMs: number;
  /**
   * A busy runner whose machine was reported dead (or whose runner went offline) keeps its
   * job this long before it is treated as dead: a machine that comes back, or a job that
   * completes meanwhile, wins. GitHub itself fails a job about 10 minutes after losing its runner.
   */
  busyRunnerLostGraceMs: number;
  /** An idle runner GitHub reports offline (while its machine looks fine) is looked at again after this long before it is replaced. */
  runnerOfflineGraceMs: number;
  /** Bound for one long poll of a scale set's message queue (GitHub answers after about 50 s). */
  scaleSetPollTimeoutMs: number;
  /** How long a scale-set listener waits before asking again for a session another listener holds (ARC: 30 s). */
  scaleSetConflictRetryMs: number;
  /**
   * A scale set whose statistics count available jobs that no message offered (one lost on its
   * way, say) has its listener list them and acquire them, at most this often.
   * Absent from the input of listeners started before it was configurable.
   */
  scaleSetWaitingJobsIntervalMs?: number;
  /**
   * A pool being deleted whose listener never held a session on its scale set (another session
   * did: perhaps an earlier listener's, ended before it told the pool) waits this long for that
   * session to lapse, and deletes the scale set once it has; past it, the scale set is left at
   * GitHub. GitHub's own runner waits 4 minutes for a conflicting session. Absent from the input
   * of listeners started before it was configurable.
   */
  scaleSetHeldSessionWaitMs?: number;
  /**
   * A runner its pool asked to leave that has not reported leaving within this long is
   * asked again (the ask is a signal that misses a runner whose start is still in flight).
   * Absent from the input of pools started before it was configurable.
   */
  leaveReaskIntervalMs?: number;
  /**
   * How often a pool looks for runners whose workflow ended without telling it (terminated by
   * hand): one query and one visibility listing per pool, however many runners it has.
   * Absent from the input of pools started before it was configurable.
   */
  poolAuditIntervalMs?: number;
  /**
   * A pool's own steps (starting runner workflows, passing jobs on, looking for ended runners) heartbeat: one whose worker
   * died is retried elsewhere after this long instead of after its whole time limit, and meanwhile
   * the runners it was starting hold capacity and the pool cannot continue as new.
   * Absent from the input of pools started before it was configurable.
   */
  poolStepHeartbeatTimeoutMs?: number;
  /**
   * How long a runner keeps trying to tell its pool of a change before it gives that report up:
   * long enough to outlast a Temporal server's restart. The pool's look for ended runners finds
   * a runner whose last report was given up. Absent from the input of runners started before it
   * was configurable (they tried five times in about two seconds).
   */
  poolReportTimeoutMs?: number;
  /**
   * How often at most a pool writes its counts into its memo (`PoolGlance`), when a decision
   * changed them: how far behind the dashboard's summary and the metrics' gauges may be. Absent
   * from the input of pools started before it was configurable.
   */
  poolGlanceIntervalMs?: number;
}

export const DEFAULT_TIMINGS: InstanceTimings = {
  createAttemptTimeoutMs: 10 * 60_000,
  createMaxAttempts: 5,
  createInitialIntervalMs: 5_000,
  createMaxIntervalMs: 60_000,
  deleteInitialIntervalMs: 1_000,
  deleteBackoffCoefficient: 2,
  deleteMaxIntervalMs: 5 * 60_000,
  deleteAttemptTimeoutMs: 5 * 60_000,
  githubInitialIntervalMs: 2_000,
  githubMaxIntervalMs: 5 * 60_000,
  githubAttemptTimeoutMs: 60_000,
  forceDeleteAttemptTimeoutMs: 50,
  busyRetryIntervalMs: 60_000,
  heartbeatTimeoutMs: 30_000,
  poolCreateBackoffInitialMs: 5_000,
  poolCreateBackoffMaxMs: 5 * 60_000,
  queuedJobTtlMs: 24 * 3_600_000,
  busyRunnerLostGraceMs: 10 * 60_000,
  runnerOfflineGraceMs: 2 * 60_000,
  scaleSetPollTimeoutMs: 70_000,
  scaleSetConflictRetryMs: 30_000,
  scaleSetWaitingJobsIntervalMs: 60_000,
  scaleSetHeldSessionWaitMs: 5 * 60_000,
  leaveReaskIntervalMs: 30_000,
  poolAuditIntervalMs: 10 * 60_000,
  poolStepHeartbeatTimeoutMs: 10_000,
  poolReportTimeoutMs: 2 * 60_000,
  poolGlanceIntervalMs: 2_000,
};

export const timingsOverrideSchema = z
  .object({
    createAttemptTimeout: durationMs,
    createMaxAttempts: z.number().int().min(1),
    createInitialInterval: durationMs,
    createMaxInterval: durationMs,
    deleteInitialInterval: durationMs,
    deleteBackoffCoefficient: z.number().min(1),
    deleteMaxInterval: durationMs,
    deleteAttemptTimeout: durationMs,
    githubInitialInterval: durationMs,
    githubMaxInterval: durationMs,
    githubAttemptTimeout: durationMs,
    forceDeleteAttemptTimeout: durationMs,
    busyRetryInterval: durationMs,
    heartbeatTimeout: durationMs,
    poolCreateBackoffInitial: durationMs,
    poolCreateBackoffMax: durationMs,
    queuedJobTtl: durationMs,
    busyRunnerLostGrace: durationMs,
    runnerOfflineGrace: durationMs,
    scaleSetPollTimeout: durationMs,
    scaleSetConflictRetry: durationMs,
    scaleSetWaitingJobsInterval: durationMs,
    scaleSetHeldSessionWait: durationMs,
    leaveReaskInterval: durationMs,
    poolAuditInterval: durationMs,
    poolStepHeartbeatTimeout: durationMs,
    poolReportTimeout: durationMs,
    poolGlanceInterval: durationMs,
  })
  .partial()
  .strict();

export type TimingsOverride = z.infer<typeof timingsOverrideSchema>;

/**
 * How often a pool looks by itself for runners whose workflow ended unreported when the liveness
 * passes run: the machine pass compares every pool's glance with the runners it lists, each
 * `liveness.interval`, and asks a pool that disagrees to look (activities/pool-look-requests.ts),
 * so the pool's own timer is a backstop. Without them the pool's timer is all there is, and
 * `poolAuditInterval` keeps its default.
 */
export const POOL_AUDIT_BACKSTOP_MS = 60 * 60_000;

export function resolveTimings(override: TimingsOverride = {}, base: InstanceTimings = DEFAULT_TIMINGS): InstanceTimings {
  const out: InstanceTimings = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined) continue;
    const target = (key.endsWith('Attempts') || key.endsWith('Coefficient') ? key : `${key}Ms`) as keyof InstanceTimings;
    out[target] = value;
  }
  return out;
}
