/**
 * Activities of the scaleSetListener workflow: short, idempotent steps over the
 * Actions-service port. They return only ids, counts and runner names: the
 * queue token and JIT configs never reach workflow history (the port keeps the
 * token in memory and refreshes the session when a restarted worker lacks it).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActionsServicePort } from '../github/actions/port';
import { isActionsError } from '../github/actions/port';
import type { RunnerScaleSetStatistic } from '../github/actions/types';
import { GitHubApiError, type GitHubScope } from '../github/port';
import type { ScaleSetTarget } from '../workflows/scale-set-messages';
import { toActivityFailure } from './failures';
import { whileHeartbeating } from './heartbeat';

export interface ScaleSetActivityDeps {
  github: { actions?(credentials: string, scope: GitHubScope): ActionsServicePort };
}

export interface SessionRef {
  target: ScaleSetTarget;
  scaleSetId: number;
  sessionId: string;
}

export type OpenSessionResult =
  | { outcome: 'opened'; sessionId: string; statistics: RunnerScaleSetStatistic | null }
  | { outcome: 'conflict'; message: string }
  | { outcome: 'scale_set_gone' };

export type PollResult =
  | { kind: 'empty' }
  | { kind: 'session_lost' }
  | {
      kind: 'message';
      messageId: number;
      statistics: RunnerScaleSetStatistic | null;
      available: number[];
      /** `repository` (`owner/name`): where the job comes from, when the message says. */
      started: { requestId: number; runnerName: string; repository?: string }[];
      completed: { requestId: number; runnerName: string; result: string }[];
      /** A message of a type the listener does not know: only its statistics are read. */
      unsupportedType?: string;
    };

/** A refusal is an answer, not a failure: the listener keeps listening and asks again later. */
export type MoveScaleSetResult = { outcome: 'moved' | 'unchanged' | 'scale_set_gone' } | { outcome: 'refused'; message: string };
export type RenameScaleSetResult = { outcome: 'renamed' | 'unchanged' | 'scale_set_gone' } | { outcome: 'refused'; message: string };

/**
 * A change to the scale set, with GitHub's answer that no retry changes (no such group, a scale
 * set of that name in the way) returned as a refusal: the operator's to act on, not a failure.
 */
async function refusedOr<T extends string>(change: () => Promise<T>): Promise<{ outcome: T } | { outcome: 'refused'; message: string }> {
  try {
    return { outcome: await change() };
  } catch (err) {
    if (err instanceof GitHubApiError && !err.retryable) return { outcome: 'refused', message: err.message.slice(0, 500) };
    throw err;
  }
}

export const SCALE_SET_FAILURES = { notConfigured: 'ScaleSetsNotConfigured' } as const;

export function createScaleSetActivities(deps: ScaleSetActivityDeps) {
  function actions(target: ScaleSetTarget): ActionsServicePort {
    if (!deps.github.actions) {
      throw ApplicationFailure.nonRetryable('this worker has no Actions-service client for runner scale sets', SCALE_SET_FAILURES.notConfigured);
    }
    return deps.github.actions(target.credentials, target.scope);
  }

  async function guarded<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      return await whileHeartbeating(work);
    } catch (err) {
      throw toActivityFailure(err);
    }
  }

  return {
    /** `labels`: those GitHub has for the scale set, found or made (names only), when its answer has them. */
    async ensureScaleSet(args: { target: ScaleSetTarget; name: string; runnerGroup: string; labels: string[] }): Promise<{ id: number; name: string; labels?: string[] }> {
      return guarded(async () => {
        const set = await actions(args.target).ensureScaleSet({ name: args.name, runnerGroup: args.runnerGroup, labels: args.labels });
        return { id: set.id, name: set.name, ...(set.labels ? { labels: set.labels.map((l) => l.name) } : {}) };
      });
    },

    /** A new session; a conflict is an answer (another listener holds the scale set), not an error. */
    async openScaleSetSession(args: { target: ScaleSetTarget; scaleSetId: number; ownerName: string }): Promise<OpenSessionResult> {
      return guarded(async () => {
        try {
          const session = await actions(args.target).createSession(args.scaleSetId, args.ownerName);
          return { outcome: 'opened', sessionId: session.sessionId, statistics: session.statistics };
        } catch (err) {
          if (isActionsError(err, 'session_conflict')) return { outcome: 'conflict', message: err.message };
          if (isActionsError(err, 'not_found')) return { outcome: 'scale_set_gone' };
          throw err;
        }
      });
    },

    /**
     * One long poll. Heartbeats so a stop reaches it at once; a restarted worker
     * resumes the recorded session (the port refreshes it for a new queue token).
     */
    async pollScaleSetMessage(args: SessionRef & { lastMessageId: number; maxCapacity: number }): Promise<PollResult> {
      return guarded(async (signal) => {
        try {
          const message = await actions(args.target).getMessage({ ...args, signal });
          if (!message) return { kind: 'empty' };
          const result: PollResult = { kind: 'message', messageId: message.messageId, statistics: message.statistics, available: [], started: [], completed: [] };
          if (message.unsupportedType !== undefined) result.unsupportedType = message.unsupportedType;
          for (const job of message.jobs) {
            if (job.messageType === 'JobAvailable') result.available.push(job.runnerRequestId);
            else if (job.messageType === 'JobStarted') {
              const repository = job.ownerName && job.repositoryName ? `${job.ownerName}/${job.repositoryName}` : undefined;
              result.started.push({ requestId: job.runnerRequestId, runnerName: job.runnerName, ...(repository ? { repository } : {}) });
            }
            else if (job.messageType === 'JobCompleted') result.completed.push({ requestId: job.runnerRequestId, runnerName: job.runnerName, result: job.result });
          }
          return result;
        } catch (err) {
          if (isActionsError(err, 'not_found')) return { kind: 'session_lost' };
          throw err;
        }
      });
    },

    async acquireScaleSetJobs(args: SessionRef & { requestIds: number[] }): Promise<{ acquired: number[] } | { sessionLost: true }> {
      return guarded(async () => {
        try {
          return { acquired: await actions(args.target).acquireJobs(args) };
        } catch (err) {
          if (isActionsError(err, 'not_found')) return { sessionLost: true as const };
          throw err;
        }
      });
    },

    /** Request ids of the scale set's jobs no listener has acquired; a scale set that is gone has none. */
    async listAcquirableScaleSetJobs(args: { target: ScaleSetTarget; scaleSetId: number }): Promise<number[]> {
      return guarded(async () => {
        try {
          return await actions(args.target).listAcquirableJobs(args.scaleSetId);
        } catch (err) {
          if (isActionsError(err, 'not_found')) return [];
          throw err;
        }
      });
    },

    /** Acknowledges a message whose effect is already recorded; a lost session means the queue forgot it too. */
    async ackScaleSetMessage(args: SessionRef & { messageId: number }): Promise<'acked' | 'session_lost'> {
      return guarded(async () => {
        try {
          await actions(args.target).deleteMessage(args);
          return 'acked';
        } catch (err) {
          if (isActionsError(err, 'not_found')) return 'session_lost';
          throw err;
        }
      });
    },

    async closeScaleSetSession(args: SessionRef): Promise<'deleted' | 'not_found'> {
      return guarded(() => actions(args.target).deleteSession(args.scaleSetId, args.sessionId));
    },

    /** Puts the scale set in the pool's runner group; idempotent (a retry after a lost answer finds it `unchanged`). */
    async moveScaleSet(args: { target: ScaleSetTarget; scaleSetId: number; runnerGroup: string }): Promise<MoveScaleSetResult> {
      return guarded(() => refusedOr(() => actions(args.target).moveScaleSet(args.scaleSetId, args.runnerGroup)));
    },

    /** Gives the scale set the pool's name; idempotent (a retry after a lost answer finds it `unchanged`). */
    async renameScaleSet(args: { target: ScaleSetTarget; scaleSetId: number; name: string }): Promise<RenameScaleSetResult> {
      return guarded(() => refusedOr(() => actions(args.target).renameScaleSet(args.scaleSetId, args.name)));
    },

    async deleteScaleSet(args: { target: ScaleSetTarget; scaleSetId: number }): Promise<'deleted' | 'not_found'> {
      return guarded(() => actions(args.target).deleteScaleSet(args.scaleSetId));
    },
  };
}

export type ScaleSetActivities = ReturnType<typeof createScaleSetActivities>;
