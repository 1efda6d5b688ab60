/**
 * The Actions-service port: what runnerflow asks of GitHub's Actions service
 * for runner scale sets. It sits next to the REST port (github/port.ts) and
 * shares its error types: GitHubApiError says whether a retry can help,
 * GitHubRateLimitError how long to wait. ActionsServiceError adds the answers a
 * listener has to tell apart (a conflicting session, an expired token, a lost
 * session).
 */
import { GitHubApiError, type RemoveRunnerOutcome } from '../port';
import type { JobMessage, RunnerScaleSet, RunnerScaleSetStatistic } from './types';

export type ActionsErrorKind =
  /** 409 on session create: another session holds the scale set. */
  | 'session_conflict'
  /** 401 that a token refresh did not cure. */
  | 'token_expired'
  /** 404: the scale set, session or runner does not exist (any more). */
  | 'not_found'
  | 'other';

export class ActionsServiceError extends GitHubApiError {
  constructor(
    message: string,
    status: number | undefined,
    retryable: boolean,
    readonly kind: ActionsErrorKind = 'other',
  ) {
    super(message, status, retryable);
    this.name = 'ActionsServiceError';
  }
}

export const isActionsError = (err: unknown, kind: ActionsErrorKind): err is ActionsServiceError =>
  err instanceof ActionsServiceError && err.kind === kind;

export interface EnsureScaleSetRequest {
  name: string;
  runnerGroup: string;
  labels: string[];
}

/** A session as the listener keeps it: the queue URL and token stay in the client's memory, never in workflow history. */
export interface SessionInfo {
  sessionId: string;
  ownerName: string;
  statistics: RunnerScaleSetStatistic | null;
}

export interface ScaleSetMessage {
  messageId: number;
  statistics: RunnerScaleSetStatistic | null;
  jobs: JobMessage[];
  /** The envelope's type when it is not job messages: its body is not read, and `jobs` is empty. */
  unsupportedType?: string;
}

export interface ActionsServicePort {
  /** Gets the scale set by name in its runner group, creating it when missing. */
  ensureScaleSet(req: EnsureScaleSetRequest): Promise<RunnerScaleSet>;
  /**
   * Puts the scale set in the runner group, as actions-runner-controller does when its runner group
   * changes: the scale set keeps its id, its session and its runners. `unchanged` when it is there
   * already, `scale_set_gone` when it no longer exists. Throws a non-retryable ActionsServiceError
   * when GitHub refuses: no such runner group, or a scale set of the same name in it already.
   */
  moveScaleSet(scaleSetId: number, runnerGroup: string): Promise<'moved' | 'unchanged' | 'scale_set_gone'>;
  /**
   * Gives the scale set a new name, as actions-runner-controller does when its scale set name
   * changes: it keeps its id, its session and its runners, and `runs-on` reaches it by the new
   * name. `unchanged` when it has that name already, `scale_set_gone` when it no longer exists.
   * Throws a non-retryable ActionsServiceError when GitHub refuses: a scale set of that name in
   * its runner group already.
   */
  renameScaleSet(scaleSetId: number, name: string): Promise<'renamed' | 'unchanged' | 'scale_set_gone'>;
  /** `deleted`, or `not_found` when it was already gone. */
  deleteScaleSet(scaleSetId: number): Promise<'deleted' | 'not_found'>;
  /** Throws ActionsServiceError `session_conflict` when another session holds the scale set. */
  createSession(scaleSetId: number, ownerName: string): Promise<SessionInfo>;
  /** A new queue token for a session we hold; `not_found` when the service dropped it. */
  refreshSession(scaleSetId: number, sessionId: string): Promise<SessionInfo>;
  deleteSession(scaleSetId: number, sessionId: string): Promise<'deleted' | 'not_found'>;
  /** One long poll; undefined when nothing arrived before the service answered 202. */
  getMessage(req: { scaleSetId: number; sessionId: string; lastMessageId: number; maxCapacity: number; signal?: AbortSignal }): Promise<ScaleSetMessage | undefined>;
  /** Acknowledges a message; one already gone counts as acknowledged. */
  deleteMessage(req: { scaleSetId: number; sessionId: string; messageId: number }): Promise<void>;
  /** The request ids won; an id another listener took is simply absent. */
  acquireJobs(req: { scaleSetId: number; sessionId: string; requestIds: number[] }): Promise<number[]>;
  /** Request ids of the scale set's jobs that no listener has acquired: those passed over while its pool took no jobs, or offered before its session. */
  listAcquirableJobs(scaleSetId: number): Promise<number[]>;
  /** An attempt given up on (`signal` aborted) removes no same-named leftover: it may be its successor's. */
  generateJitConfig(scaleSetId: number, runnerName: string, workFolder: string, signal?: AbortSignal): Promise<{ runnerId: number; encodedJitConfig: string }>;
  findRunnerByName(name: string): Promise<{ id: number; name: string; runnerScaleSetId: number } | undefined>;
  removeRunner(runnerId: number): Promise<RemoveRunnerOutcome>;
}
