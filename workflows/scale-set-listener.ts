/**
 * scaleSetListener, id `scaleset/<pool>`: listens to one runner scale set for its
 * pool. It gets or creates the scale set, holds its message session, long-polls
 * the queue in short activities, acquires available jobs, tells the pool the
 * statistics its runner count follows and the runners which job they took, and
 * only then acknowledges each message. A killed worker replays this history and
 * resumes the recorded session (or opens a new one); a message delivered again
 * is acknowledged without being applied twice, and statistics are absolute, so
 * nothing is double-counted. The workflow id makes a second listener for the
 * pool impossible; a 409 on session create makes one for the scale set wait.
 * A call the service refuses for good does not end it: it drops its session,
 * waits and starts over, as GitHub's own controllers restart their listeners.
 */
import {
  ActivityFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { ActivityCancellationType } from '@temporalio/common';
import type { PollResult, ScaleSetActivities } from '../activities/scale-set-activities';
import { desiredRunnerCount, foreignLabels } from '../domain/scale-set';
import { scaleSetLifecycle } from './lifecycle-sink';
import { listenerSettingsArgs } from './signal-input';
import { jobCompletedSignal, jobStartedSignal, runnerWorkflowId } from './messages';
import { jobProgressSignal, poolWorkflowId } from './pool-messages';
import {
  SCALE_SET_MESSAGE_DESCRIPTIONS,
  scaleSetDemandSignal,
  scaleSetStateQuery,
  stopListenerSignal,
  updateListenerSignal,
  type ListenerCarried,
  type ListenerStatus,
  type ScaleSetListenerInput,
  type ScaleSetView,
  type StopListenerArgs,
} from './scale-set-messages';

const DEFAULT_HISTORY_LIMIT = 2_000;
const RECENT_IDS_KEPT = 50;
/**
 * Tries at a call that must not hold up what follows when the service keeps failing it. Closing a
 * session is a courtesy (a session nobody polls expires by itself), and must not hold up deleting
 * the scale set or starting over after a failure; a deleted pool's ask for a held session is asked
 * again on the wait's own clock, which endless retries would outlast; and a move to a new runner
 * group or a new name must not stop the listening, so it is tried again after `githubMaxInterval`
 * instead.
 */
const FEW_ATTEMPTS = 3;
/** Caps the doubling of the pause after failures, long before the interval itself is capped. */
const MAX_DOUBLINGS = 20;
/** For listeners whose input predates `scaleSetWaitingJobsIntervalMs`. */
const DEFAULT_WAITING_JOBS_INTERVAL_MS = 60_000;
/** For listeners whose input predates `scaleSetHeldSessionWaitMs`. */
const DEFAULT_HELD_SESSION_WAIT_MS = 5 * 60_000;

/**
 * How `lastError` starts while a move or a rename of the scale set is not done: the listener clears
 * only its own complaint once the change is made or no longer wanted, and leaves any other.
 */
const notMoved = (scaleSetId: number | undefined): string => `scale set ${scaleSetId} not moved`;
const notRenamed = (scaleSetId: number | undefined): string => `scale set ${scaleSetId} not renamed`;

/** `takesJobs` of an updateListener signal; pools that predate it send none. */
function takesJobsOf(args: unknown): boolean | undefined {
  const value = typeof args === 'object' && args !== null ? (args as { takesJobs?: unknown }).takesJobs : undefined;
  return typeof value === 'boolean' ? value : undefined;
}

/** The failure's own words: an activity failure's message says only that an activity failed. */
function failureMessage(err: ActivityFailure): string {
  return (err.cause?.message || err.message).slice(0, 1000);
}

export async function scaleSetListener(input: ScaleSetListenerInput): Promise<ScaleSetView> {
  const t = input.timings;
  const settings = { ...input.settings };
  const retry = { initialInterval: t.githubInitialIntervalMs, maximumInterval: t.githubMaxIntervalMs, backoffCoefficient: 2 };
  const calls = proxyActivities<ScaleSetActivities>({
    startToCloseTimeout: t.githubAttemptTimeoutMs,
    heartbeatTimeout: t.heartbeatTimeoutMs,
    retry: { ...retry, nonRetryableErrorTypes: ['ScaleSetsNotConfigured'] },
  });
  const polls = proxyActivities<ScaleSetActivities>({
    startToCloseTimeout: t.scaleSetPollTimeoutMs,
    heartbeatTimeout: t.heartbeatTimeoutMs,
    retry: { ...retry, nonRetryableErrorTypes: ['ScaleSetsNotConfigured'] },
    cancellationType: ActivityCancellationType.TRY_CANCEL,
  });
  const fewTries = proxyActivities<ScaleSetActivities>({
    startToCloseTimeout: t.githubAttemptTimeoutMs,
    heartbeatTimeout: t.heartbeatTimeoutMs,
    retry: { ...retry, maximumAttempts: FEW_ATTEMPTS, nonRetryableErrorTypes: ['ScaleSetsNotConfigured'] },
  });
  // Reports name the listener they come from, so that the pool hears a new listener whose count
  // starts again. (patched: a run begun before sends its reports as it did, to its end.)
  const listenerId = patched('scale-set-demand-names-its-listener') ? workflowInfo().firstExecutionRunId : undefined;
  // (patched: listeners begun before replay without ever listing jobs that wait.)
  const listsWaitingJobs = patched('listener-acquires-waiting-jobs');
  const waitingJobsInterval = t.scaleSetWaitingJobsIntervalMs ?? DEFAULT_WAITING_JOBS_INTERVAL_MS;
  // (patched: listeners begun before replay without ever moving their scale set.)
  const movesScaleSet = patched('listener-moves-its-scale-set');
  // (patched: listeners begun before replay without ever renaming their scale set.)
  const renamesScaleSet = patched('listener-renames-its-scale-set');
  /** Told of a new name by a run that cannot rename: it continues as new, and the next run renames. */
  let renameWaits = false;

  const state: ListenerCarried = input.carried ?? {
    lastMessageId: 0,
    messagesApplied: 0,
    redeliveriesSkipped: 0,
    sessionsOpened: 0,
    jobsAcquired: 0,
    recentMessageIds: [],
    demandSeq: 0,
    ...(input.knownScaleSetId !== undefined ? { scaleSetId: input.knownScaleSetId } : {}),
  };
  let status: ListenerStatus = state.consecutiveFailures ? 'failing' : state.sessionId ? 'reconnecting' : 'starting';
  let stop: StopListenerArgs | undefined;
  let poll: CancellationScope | undefined;

  const desired = (): number => desiredRunnerCount(settings.minRunners, settings.maxRunners, state.statistics?.totalAssignedJobs ?? 0);
  // A disabled or deleting pool makes no runners: a job acquired for it would wait for one that
  // never comes, while a scale set of another installation could have run it.
  const takesJobs = (): boolean => settings.takesJobs !== false;
  // (patched: listeners that acquired although told not to replay acquiring.)
  const acquiring = (): boolean => takesJobs() || !patched('listener-acquires-only-for-an-open-pool');
  const view = (): ScaleSetView => ({
    ...state,
    pool: settings.pool,
    name: settings.name,
    runnerGroup: settings.runnerGroup,
    status,
    desiredRunners: desired(),
    minRunners: settings.minRunners,
    maxRunners: settings.maxRunners,
    takesJobs: takesJobs(),
  });

  setHandler(scaleSetStateQuery, view, { description: SCALE_SET_MESSAGE_DESCRIPTIONS.scaleSetState });
  setHandler(
    stopListenerSignal,
    (args) => {
      stop = { ...(typeof args === 'object' && args !== null ? args : {}) };
      poll?.cancel();
    },
    { description: SCALE_SET_MESSAGE_DESCRIPTIONS.stopListener },
  );
  setHandler(
    updateListenerSignal,
    (args) => {
      const next = listenerSettingsArgs(args);
      if (!next) return;
      settings.minRunners = next.minRunners;
      settings.maxRunners = next.maxRunners;
      settings.labels = next.labels;
      const takes = takesJobsOf(args);
      const reopened = takes === true && !takesJobs();
      if (takes !== undefined) settings.takesJobs = takes;
      const regrouped = next.runnerGroup !== undefined && next.runnerGroup !== settings.runnerGroup;
      if (regrouped) {
        settings.runnerGroup = next.runnerGroup!;
        // A new group is worth a try at once, whatever the last one's refusal said.
        state.moveTriedAt = undefined;
        // Back to the group it is in: no move is left to complain of.
        if (settings.runnerGroup === state.runnerGroupAtGitHub) clearError(notMoved(state.scaleSetId));
      }
      const renamed = next.name !== undefined && next.name !== settings.name;
      if (renamed) {
        settings.name = next.name!;
        state.renameTriedAt = undefined;
        if (settings.name === state.nameAtGitHub) clearError(notRenamed(state.scaleSetId));
        // (patched: a run begun before renaming, whose older worker ignored the name, replays ignoring it.)
        if (!renamesScaleSet && patched('listener-continues-as-new-to-rename')) renameWaits = true;
      }
      // The poll out now asked for no capacity and waits up to a minute: cut it short, so that
      // the next one asks for the pool's capacity and the jobs passed over are acquired now; and
      // so that a scale set moves to its pool's new group, or takes its new name, now, not after
      // the poll.
      if ((reopened && listsWaitingJobs) || (regrouped && movesScaleSet) || (renamed && (renamesScaleSet || renameWaits))) poll?.cancel();
    },
    { description: SCALE_SET_MESSAGE_DESCRIPTIONS.updateListener },
  );

  const pool = getExternalWorkflowHandle(poolWorkflowId(settings.pool));
  const target = settings.target;

  async function tellPool(): Promise<void> {
    if (state.scaleSetId === undefined) return;
    state.demandSeq += 1;
    await pool
      .signal(scaleSetDemandSignal, {
        scaleSetId: state.scaleSetId,
        scaleSetName: settings.name,
        totalAssignedJobs: state.statistics?.totalAssignedJobs ?? 0,
        seq: state.demandSeq,
        ...(listenerId !== undefined ? { listener: listenerId } : {}),
      })
      .catch((err: unknown) => log.warn('pool did not take the scale-set demand', { pool: settings.pool, error: String(err) }));
  }

  /** Runners learn of their job from the message (no webhook is needed); runners not ours are ignored. */
  async function tellRunners(message: Extract<PollResult, { kind: 'message' }>): Promise<void> {
    const sends: Promise<unknown>[] = [];
    for (const s of message.started) {
      // The repository too: the pool keeps where its jobs come from (an enterprise's pool follows
      // the webhooks of their organisations), and no `queued` webhook tells it for a scale set's job.
      sends.push(pool.signal(jobProgressSignal, { jobId: s.requestId, action: 'in_progress', runnerName: s.runnerName, ...(s.repository ? { repository: s.repository } : {}) }));
      sends.push(getExternalWorkflowHandle(runnerWorkflowId(s.runnerName)).signal(jobStartedSignal, { jobId: s.requestId }));
    }
    for (const c of message.completed) {
      sends.push(pool.signal(jobProgressSignal, { jobId: c.requestId, action: 'completed' }));
      if (c.runnerName) sends.push(getExternalWorkflowHandle(runnerWorkflowId(c.runnerName)).signal(jobCompletedSignal, { jobId: c.requestId, conclusion: c.result }));
    }
    await Promise.all(sends.map((p) => p.catch(() => undefined)));
  }

  async function openSession(): Promise<boolean> {
    if (state.scaleSetId === undefined) {
      const runnerGroup = settings.runnerGroup;
      const set = await calls.ensureScaleSet({ target, name: settings.name, runnerGroup, labels: settings.labels });
      state.scaleSetId = set.id;
      state.runnerGroupAtGitHub = runnerGroup;
      state.nameAtGitHub = set.name;
      // Found with labels the pool does not have: only a new scale set takes the pool's (results from
      // before the activity returned labels carry none, and say nothing).
      state.labelsAtGitHub = foreignLabels(set.labels, settings.name, settings.labels);
      if (state.labelsAtGitHub) {
        log.warn("scale set found at GitHub with labels other than the pool's: jobs that name a label it lacks will not reach it; delete the pool and create it again to make the scale set anew", {
          pool: settings.pool,
          scaleSetId: set.id,
          labelsAtGitHub: state.labelsAtGitHub,
          poolLabels: settings.labels,
        });
      }
    }
    const opened = await calls.openScaleSetSession({ target, scaleSetId: state.scaleSetId, ownerName: settings.ownerName });
    if (opened.outcome === 'scale_set_gone') {
      state.scaleSetId = undefined;
      return false;
    }
    if (opened.outcome === 'conflict') {
      // Another listener holds the scale set: never poll beside it; ask again later.
      status = 'conflict';
      // Said so that an operator can tell a wait that ends by itself from one that does not.
      const every = t.scaleSetConflictRetryMs < 1_000 ? `${t.scaleSetConflictRetryMs} ms` : `${Math.round(t.scaleSetConflictRetryMs / 1_000)} s`;
      state.lastError =
        `another session holds scale set ${state.scaleSetId}; asked for again every ${every}. ` +
        `A session nobody polls (a terminated listener's) lapses within minutes; one that another installation polls does not (${opened.message})`;
      await condition(() => stop !== undefined, t.scaleSetConflictRetryMs);
      return false;
    }
    state.sessionId = opened.sessionId;
    state.sessionsOpened += 1;
    status = 'listening';
    state.lastError = undefined;
    if (opened.statistics) state.statistics = opened.statistics;
    // Jobs offered before this session (while no listener held one) are not offered to it.
    if (listsWaitingJobs && (opened.statistics?.totalAvailableJobs ?? 1) > 0) state.waitingJobsDue = true;
    await tellPool();
    return true;
  }

  async function apply(message: Extract<PollResult, { kind: 'message' }>, sessionId: string): Promise<void> {
    const ref = { target, scaleSetId: state.scaleSetId!, sessionId };
    if (message.messageId <= state.lastMessageId) {
      // Delivered again after we applied it: acknowledge only.
      state.redeliveriesSkipped += 1;
      await calls.ackScaleSetMessage({ ...ref, messageId: message.messageId });
      return;
    }
    if (message.unsupportedType !== undefined) {
      // A kind of message this code predates. Failing on it would stop the listener for good (the
      // queue hands it out again until it is deleted), and a job it might have announced is still
      // counted by the statistics, which send the listener to the list of acquirable jobs.
      state.unsupportedMessages = (state.unsupportedMessages ?? 0) + 1;
      state.lastUnsupportedType = message.unsupportedType;
      log.warn('acknowledged a scale-set message of a type this listener does not know', { pool: settings.pool, messageId: message.messageId, messageType: message.unsupportedType });
    }
    if (message.available.length > 0 && acquiring()) {
      const acquired = await calls.acquireScaleSetJobs({ ...ref, requestIds: message.available });
      if ('sessionLost' in acquired) {
        state.sessionId = undefined;
        return;
      }
      state.jobsAcquired += acquired.acquired.length;
    } else if (message.available.length > 0 && listsWaitingJobs) {
      // Passed over: no later message need offer them again, so they are listed once the pool takes jobs.
      state.waitingJobsDue = true;
    }
    if (message.statistics) state.statistics = message.statistics;
    if (listsWaitingJobs && message.available.length === 0 && (message.statistics?.totalAvailableJobs ?? 0) > 0 && Date.now() - (state.waitingJobsListedAt ?? 0) >= waitingJobsInterval) {
      // Available jobs no message offered: an offer lost on its way, or one a message still to come
      // carries (acquiring it now is harmless: the later acquire wins nothing).
      state.waitingJobsDue = true;
    }
    await tellPool();
    await tellRunners(message);
    // The effect is in this workflow's history now: safe to let the service forget the message.
    state.lastMessageId = message.messageId;
    state.messagesApplied += 1;
    state.recentMessageIds = [...state.recentMessageIds, message.messageId].slice(-RECENT_IDS_KEPT);
    if ((await calls.ackScaleSetMessage({ ...ref, messageId: message.messageId })) === 'session_lost') state.sessionId = undefined;
  }

  /**
   * Lists the scale set's jobs that no listener acquired and acquires them, as GitHub's own
   * listener did when it opened a session: a job offered while the pool took none, before this
   * session, or in a message that never arrived would otherwise wait for an offer that has gone.
   * Returns false when the session was lost (the next session looks again).
   */
  async function acquireWaitingJobs(sessionId: string): Promise<boolean> {
    const scaleSetId = state.scaleSetId!;
    state.waitingJobsListedAt = Date.now();
    const requestIds = await calls.listAcquirableScaleSetJobs({ target, scaleSetId });
    if (requestIds.length > 0) {
      const acquired = await calls.acquireScaleSetJobs({ target, scaleSetId, sessionId, requestIds });
      if ('sessionLost' in acquired) {
        state.sessionId = undefined;
        return false;
      }
      state.jobsAcquired += acquired.acquired.length;
      state.waitingJobsAcquired = (state.waitingJobsAcquired ?? 0) + acquired.acquired.length;
      if (acquired.acquired.length > 0) log.info('acquired jobs that waited for the scale set', { pool: settings.pool, scaleSetId, jobs: acquired.acquired });
    }
    state.waitingJobsDue = false;
    return true;
  }

  /**
   * The pool's runner group changed: move the scale set there, as actions-runner-controller does,
   * so that it keeps its id, its session, its runners and the jobs they run. Only with a session
   * held: that proves the scale set is this pool's, not another installation's of the same name.
   * A refusal (no such group, or a scale set of this name in it already) or an outage leaves the
   * scale set where it is, listening as before, and is tried again after `githubMaxInterval` or
   * at the pool's next change of group.
   */
  function moveDue(): boolean {
    if (!movesScaleSet || state.scaleSetId === undefined || state.runnerGroupAtGitHub === settings.runnerGroup) return false;
    return state.moveTriedAt === undefined || Date.now() - state.moveTriedAt >= t.githubMaxIntervalMs;
  }

  /** A call of `fewTries` that failed every try is an answer too: the caller tries again later, listening meanwhile. */
  async function answerOf<T>(call: () => Promise<T>): Promise<T | { outcome: 'failed'; message: string }> {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      return { outcome: 'failed', message: failureMessage(err) };
    }
  }

  /** Deleted at GitHub: the next session finds the scale set by the pool's name, in its group, or makes it. */
  function forgetScaleSet(): void {
    state.scaleSetId = undefined;
    state.sessionId = undefined;
  }

  /** Clears `lastError` when it is the complaint that starts so: another may still stand. */
  function clearError(complaint: string): void {
    if (state.lastError?.startsWith(complaint)) state.lastError = undefined;
  }

  async function moveScaleSet(scaleSetId: number): Promise<void> {
    const runnerGroup = settings.runnerGroup;
    const moved = await answerOf(() => fewTries.moveScaleSet({ target, scaleSetId, runnerGroup }));
    if (moved.outcome === 'scale_set_gone') return forgetScaleSet();
    if (moved.outcome === 'moved' || moved.outcome === 'unchanged') {
      if (moved.outcome === 'moved') log.info('scale set moved to the pool\'s runner group', { pool: settings.pool, scaleSetId, runnerGroup, from: state.runnerGroupAtGitHub });
      state.runnerGroupAtGitHub = runnerGroup;
      state.moveTriedAt = undefined;
      clearError(notMoved(scaleSetId));
      return;
    }
    state.moveTriedAt = Date.now();
    state.lastError = `${notMoved(scaleSetId)} to runner group "${runnerGroup}"; it stays in "${state.runnerGroupAtGitHub ?? 'its group'}" and runs jobs from there: ${'message' in moved ? moved.message : moved.outcome}`;
    log.warn('scale set not moved to the pool\'s runner group', { pool: settings.pool, scaleSetId, runnerGroup, error: state.lastError });
  }

  /**
   * The pool's scale set has a new name: give it to the scale set at GitHub, as
   * actions-runner-controller does, so that `runs-on` reaches the same scale set, with its id, its
   * session, its runners and the jobs they run, by the new name. As with a move, only with a
   * session held, and a refusal (a scale set of that name in the group already) or an outage
   * leaves the scale set listening under its old name, tried again after `githubMaxInterval` or
   * at the pool's next new name.
   */
  function renameDue(): boolean {
    if (!renamesScaleSet || state.scaleSetId === undefined || state.nameAtGitHub === settings.name) return false;
    return state.renameTriedAt === undefined || Date.now() - state.renameTriedAt >= t.githubMaxIntervalMs;
  }

  async function renameScaleSet(scaleSetId: number): Promise<void> {
    const name = settings.name;
    const renamed = await answerOf(() => fewTries.renameScaleSet({ target, scaleSetId, name }));
    if (renamed.outcome === 'scale_set_gone') return forgetScaleSet();
    if (renamed.outcome === 'renamed' || renamed.outcome === 'unchanged') {
      if (renamed.outcome === 'renamed') log.info('scale set renamed as its pool says', { pool: settings.pool, scaleSetId, name, from: state.nameAtGitHub });
      state.nameAtGitHub = name;
      state.renameTriedAt = undefined;
      clearError(notRenamed(scaleSetId));
      return;
    }
    state.renameTriedAt = Date.now();
    state.lastError = `${notRenamed(scaleSetId)} "${name}"; it is still "${state.nameAtGitHub ?? 'as it was'}" and runs jobs under that name: ${'message' in renamed ? renamed.message : renamed.outcome}`;
    log.warn('scale set not renamed as its pool says', { pool: settings.pool, scaleSetId, name, error: state.lastError });
  }

  /** Closes the session; returns why it could not be closed. */
  async function closeSession(scaleSetId: number, sessionId: string): Promise<string | undefined> {
    try {
      await fewTries.closeScaleSetSession({ target, scaleSetId, sessionId });
      return undefined;
    } catch (err) {
      // GitHub's own listeners only log this: the service answers a close of an expired session
      // with a 400, and a session nobody polls expires anyway. (patched: listeners that failed on
      // it replay failing.)
      if (!(err instanceof ActivityFailure) || isCancellation(err) || !patched('listener-survives-failed-session-close')) throw err;
      const why = failureMessage(err);
      log.warn('message session not closed; the service lets it expire', { pool: settings.pool, sessionId, error: why });
      return why;
    }
  }

  /**
   * A call the service refused for good: a runner group not made yet, credentials without the
   * right, an answer this code does not understand. An operator or the service can change that,
   * and nothing would start a listener that ended until its pool next continued as new: so, as
   * GitHub's own controllers restart theirs, drop the session, pause, and start over.
   */
  async function recover(err: ActivityFailure): Promise<void> {
    const failures = (state.consecutiveFailures ?? 0) + 1;
    state.consecutiveFailures = failures;
    status = 'failing';
    state.lastError = failureMessage(err);
    log.warn('scale-set listener failed; starting over after a pause', { pool: settings.pool, failures, error: state.lastError });
    if (state.scaleSetId !== undefined && state.sessionId !== undefined) await closeSession(state.scaleSetId, state.sessionId);
    state.sessionId = undefined;
    const pause = Math.min(t.githubMaxIntervalMs, t.githubInitialIntervalMs * 2 ** Math.min(failures - 1, MAX_DOUBLINGS));
    await condition(() => stop !== undefined, pause);
  }

  /**
   * The pool is being deleted, and no listener of it is known to have held a session on this scale
   * set. One may have: a listener terminated while GitHub opened its session, before it could tell
   * the pool, leaves a session its successor meets as a 409, and a scale set nobody would delete.
   * A session nobody polls lapses, while another installation's listener keeps polling its own; so
   * ask for a session until the wait ends. One granted means nobody listens on the scale set any
   * more: it is the pool's to delete. Returns whether it is.
   */
  async function outlastHeldSession(scaleSetId: number): Promise<boolean> {
    const until = Date.now() + (t.scaleSetHeldSessionWaitMs ?? DEFAULT_HELD_SESSION_WAIT_MS);
    for (;;) {
      // An outage at GitHub says nothing about who holds the scale set: ask again while the wait lasts.
      const opened = await answerOf(() => fewTries.openScaleSetSession({ target, scaleSetId, ownerName: settings.ownerName }));
      if (opened.outcome === 'scale_set_gone') {
        state.lastError = undefined;
        return false;
      }
      if (opened.outcome === 'opened') {
        state.sessionsOpened += 1;
        await closeSession(scaleSetId, opened.sessionId);
        return true;
      }
      const why = opened.outcome === 'conflict' ? `another session still holds it (${opened.message})` : `GitHub could not be asked (${opened.message})`;
      const left = until - Date.now();
      if (left <= 0) {
        state.lastError = `scale set ${scaleSetId} left at GitHub: ${why}`;
        log.warn('scale set left at GitHub', { pool: settings.pool, scaleSetId, error: state.lastError });
        scaleSetLifecycle.left({ pool: settings.pool });
        return false;
      }
      state.lastError = `waiting for another session on scale set ${scaleSetId} to lapse before deleting it: ${why}`;
      await sleep(Math.min(t.scaleSetConflictRetryMs, left));
    }
  }

  // A run's first look at a quiet scale set waits an interval too: a run begins with a new session,
  // which already looked, or continues one that looked within the interval.
  const quietSince = Date.now();
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  function historyFull(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > historyLimit;
  }
  while (stop === undefined) {
    try {
      if (state.sessionId === undefined) {
        await openSession();
        // Another listener may hold the scale set for days: each refused attempt adds to this
        // history, which must be bounded then too. (patched: histories from before this check
        // replay without it.)
        if (stop === undefined && historyFull() && patched('listener-history-bound-without-session')) {
          await continueAsNew<typeof scaleSetListener>({ ...input, settings, carried: state });
        }
        continue;
      }
      const sessionId = state.sessionId;
      // Told of a new name that this run cannot give the scale set: the next run can.
      if (renameWaits) await continueAsNew<typeof scaleSetListener>({ ...input, settings, carried: state });
      if (moveDue()) {
        await moveScaleSet(state.scaleSetId!);
        if (state.sessionId === undefined) continue;
      }
      if (renameDue()) {
        await renameScaleSet(state.scaleSetId!);
        if (state.sessionId === undefined) continue;
      }
      if (state.waitingJobsDue && acquiring()) {
        if (!(await acquireWaitingJobs(sessionId))) continue;
      }
      let polled: PollResult | undefined;
      try {
        poll = new CancellationScope();
        polled = await poll.run(() =>
          polls.pollScaleSetMessage({ target, scaleSetId: state.scaleSetId!, sessionId, lastMessageId: state.lastMessageId, maxCapacity: takesJobs() ? settings.maxRunners : 0 }),
        );
      } catch (err) {
        if (!isCancellation(err)) throw err;
      } finally {
        poll = undefined;
      }
      if (stop !== undefined) break;
      // Cut short by the pool opening to jobs again (only a stop did so before).
      if (polled === undefined) continue;
      if (polled.kind === 'session_lost') {
        status = 'reconnecting';
        state.lastError = `message session ${sessionId} was lost`;
        state.sessionId = undefined;
      } else if (polled.kind === 'message') {
        await apply(polled, sessionId);
      } else if (listsWaitingJobs && acquiring() && Date.now() - Math.max(quietSince, state.waitingJobsListedAt ?? 0) >= waitingJobsInterval && patched('listener-lists-waiting-jobs-when-quiet')) {
        // A poll with nothing to say. The offer of a job may have been lost on its way, and on a
        // quiet scale set no later message would count it: look for jobs waiting, at most once an
        // interval, so that such a job waits minutes, not until the next job or session.
        state.waitingJobsDue = true;
      }
      // Counted only once a poll's answer took effect: a failure after each new session still backs off.
      if (state.consecutiveFailures) state.consecutiveFailures = 0;
    } catch (err) {
      // (patched: listeners that ended on such a failure replay ending.)
      if (!(err instanceof ActivityFailure) || isCancellation(err) || !patched('listener-survives-failures')) throw err;
      await recover(err);
    }
    if (stop === undefined && historyFull()) {
      await continueAsNew<typeof scaleSetListener>({ ...input, settings, carried: state });
    }
  }

  status = 'stopping';
  if (state.scaleSetId !== undefined && state.sessionId !== undefined) {
    const notClosed = await closeSession(state.scaleSetId, state.sessionId);
    if (notClosed !== undefined) state.lastError = notClosed;
    state.sessionId = undefined;
  }
  // A scale set neither this listener nor, as its pool knows, an earlier one held a session on
  // may belong to another listener: it is ours to delete only once the session in its way lapses.
  let ours = state.sessionsOpened > 0 || (stop?.heldScaleSetId !== undefined && stop.heldScaleSetId === state.scaleSetId);
  // (patched: listeners stopped before replay without waiting for a held session to lapse.)
  if (stop?.deleteScaleSet && state.scaleSetId !== undefined && !ours && patched('listener-outlasts-a-lapsing-session')) {
    ours = await outlastHeldSession(state.scaleSetId);
  }
  if (stop?.deleteScaleSet && state.scaleSetId !== undefined && ours) await calls.deleteScaleSet({ target, scaleSetId: state.scaleSetId });
  status = 'stopped';
  return view();
}
