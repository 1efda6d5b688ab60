/**
 * Message definitions of the scaleSetListener workflow (one per scale-set pool),
 * shared by the workflow, the pool and clients (API, CLI, Web UI).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RunnerScaleSetStatistic } from '../github/actions/types';
import type { GitHubScopeSettings } from '../domain/pool';
import type { InstanceTimings } from '../domain/timings';

export const SCALE_SET_LISTENER_WORKFLOW = 'scaleSetListener';
export const scaleSetListenerId = (pool: string): string => `scaleset/${pool}`;

/** Where the scale set lives and which credentials reach it. */
export interface ScaleSetTarget {
  credentials: string;
  scope: GitHubScopeSettings;
}

export interface ScaleSetListenerSettings {
  pool: string;
  target: ScaleSetTarget;
  name: string;
  runnerGroup: string;
  labels: string[];
  minRunners: number;
  maxRunners: number;
  /** Owner name of the sessions this listener opens. */
  ownerName: string;
  /**
   * False while the pool takes no jobs (disabled, or being deleted): the listener acquires none
   * and asks the service for no capacity. Absent from pools that predate it: true.
   */
  takesJobs?: boolean;
}

/** `failing`: a call was refused for good; the listener pauses and starts over (see `lastError`). */
export type ListenerStatus = 'starting' | 'listening' | 'conflict' | 'reconnecting' | 'failing' | 'stopping' | 'stopped';

export interface ListenerCarried {
  scaleSetId?: number;
  sessionId?: string;
  lastMessageId: number;
  statistics?: RunnerScaleSetStatistic;
  /** Messages applied over the listener's life. */
  messagesApplied: number;
  /** Deliveries of messages already applied (redeliveries), acknowledged without applying them again. */
  redeliveriesSkipped: number;
  sessionsOpened: number;
  jobsAcquired: number;
  /** Newest applied message ids (bounded), so operators and tests can see none was applied twice. */
  recentMessageIds: number[];
  demandSeq: number;
  /** Failures in a row; the pause before starting over doubles with each. */
  consecutiveFailures?: number;
  /** Why the listener is failing, waiting or reconnecting (or could not close its session). */
  lastError?: string;
  /** Jobs may wait for the scale set that no message offered this listener while it could take them: it lists them once it can. */
  waitingJobsDue?: boolean;
  /** When it last listed them (workflow time): a scale set's statistics ask for a list at most once per `scaleSetWaitingJobsIntervalMs`. */
  waitingJobsListedAt?: number;
  /** Jobs acquired from those lists (also counted in `jobsAcquired`). */
  waitingJobsAcquired?: number;
  /** Messages of a type the listener does not know: acknowledged with only their statistics read. */
  unsupportedMessages?: number;
  /** The type of the latest of them. */
  lastUnsupportedType?: string;
  /**
   * The runner group the scale set is in at GitHub, as far as this listener knows: set when it
   * finds or creates the scale set, and when it moves it. Absent when unknown (carried from a
   * listener that predates it): the next move looks.
   */
  runnerGroupAtGitHub?: string;
  /** When the listener last tried to move the scale set to the pool's runner group and could not (workflow time). */
  moveTriedAt?: number;
  /**
   * The scale set's name at GitHub, as far as this listener knows: set when it finds or creates
   * the scale set, and when it renames it. Absent when unknown (carried from a listener that
   * predates it): the next rename looks.
   */
  nameAtGitHub?: string;
  /** When the listener last tried to give the scale set the pool's name and could not (workflow time). */
  renameTriedAt?: number;
  /**
   * The scale set's labels at GitHub, when the scale set found by the pool's name has labels other
   * than the pool's (made by another tool, or by an earlier runnerflow without its name among
   * them): jobs that name a label the scale set lacks never reach the pool. Absent when they match.
   */
  labelsAtGitHub?: string[];
}

export interface ScaleSetListenerInput {
  settings: ScaleSetListenerSettings;
  timings: InstanceTimings;
  carried?: ListenerCarried;
  /** A listener started afresh: the scale set its pool last heard of from its listener, looked up by id rather than by name. */
  knownScaleSetId?: number;
  /** History events before continuing as new (tests set it low). */
  historyLimit?: number;
}

export interface ScaleSetView extends ListenerCarried {
  pool: string;
  /** The pool's name for its scale set: what it is called at GitHub, or is being renamed to (see `nameAtGitHub`). */
  name: string;
  /** The pool's runner group: where the scale set is, or is being moved to (see `runnerGroupAtGitHub`). */
  runnerGroup: string;
  status: ListenerStatus;
  /** `min(maxRunners, minRunners + totalAssignedJobs)`. */
  desiredRunners: number;
  minRunners: number;
  maxRunners: number;
  /** False while the pool takes no jobs: none are acquired. */
  takesJobs: boolean;
}

export interface StopListenerArgs {
  /** Delete the scale set after closing the session (the pool is being deleted). */
  deleteScaleSet?: boolean;
  /**
   * The scale set a listener of the pool held a session on, as its reports said. Deleted even if
   * this listener never held one: it was started again after its predecessor ended without closing
   * its session (terminated by hand), and waits in `conflict` until GitHub lets that session lapse.
   */
  heldScaleSetId?: number;
  reason?: string;
}
export interface UpdateListenerArgs {
  minRunners: number;
  maxRunners: number;
  labels: string[];
  /** See `ScaleSetListenerSettings.takesJobs`. */
  takesJobs?: boolean;
  /** The pool's runner group: the listener moves the scale set there. Absent from pools that predate moving it. */
  runnerGroup?: string;
  /** The pool's name for its scale set: the listener renames the scale set. Absent from pools that predate renaming it. */
  name?: string;
}
/** Sent to the pool: the scale set's statistics, the truth its runner count follows. */
export interface ScaleSetDemandArgs {
  scaleSetId: number;
  scaleSetName: string;
  totalAssignedJobs: number;
  /** Increases with every report of one listener; an older one arriving late is dropped. */
  seq: number;
  /**
   * The listener's first run id: the same through its continue-as-new, another for a listener
   * started anew (stopped, failed, or started by a later run of the pool), whose `seq` starts
   * again. Absent from listeners begun before reports carried it.
   */
  listener?: string;
}

export const scaleSetStateQuery = defineQuery<ScaleSetView>('scaleSetState');
export const stopListenerSignal = defineSignal<[StopListenerArgs]>('stopListener');
export const updateListenerSignal = defineSignal<[UpdateListenerArgs]>('updateListener');
export const scaleSetDemandSignal = defineSignal<[ScaleSetDemandArgs]>('scaleSetDemand');

export const SCALE_SET_MESSAGE_DESCRIPTIONS = {
  scaleSetState: 'The scale set: id, session, last message id, statistics, desired runner count and listener status.',
  stopListener: 'Close the message session and end the listener; with {"deleteScaleSet": true} also delete the scale set. Input: {"reason": "..."}',
  updateListener: 'New minRunners, maxRunners, labels, takesJobs, runnerGroup and name from the pool settings (sent by the pool).',
  scaleSetDemand: 'Statistics from the scale set listener: the pool keeps min(maxRunners, minRunners + totalAssignedJobs) runners.',
} as const;
