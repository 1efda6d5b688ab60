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
 */
import {
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { ActivityCancellationType } from '@temporalio/common';
import type { PollResult, ScaleSetActivities } from '../activities/scale-set-activities';
import { desiredRunnerCount } from '../domain/scale-set';
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

  const state: ListenerCarried = input.carried ?? {
    lastMessageId: 0,
    messagesApplied: 0,
    redeliveriesSkipped: 0,
    sessionsOpened: 0,
    jobsAcquired: 0,
    recentMessageIds: [],
    demandSeq: 0,
  };
  let status: ListenerStatus = state.sessionId ? 'reconnecting' : 'starting';
  let lastError: string | undefined;
  let stop: StopListenerArgs | undefined;
  let poll: CancellationScope | undefined;

  const desired = (): number => desiredRunnerCount(settings.minRunners, settings.maxRunners, state.statistics?.totalAssignedJobs ?? 0);
  const view = (): ScaleSetView => ({
    ...state,
    pool: settings.pool,
    name: settings.name,
    status,
    desiredRunners: desired(),
    minRunners: settings.minRunners,
    maxRunners: settings.maxRunners,
    ...(lastError ? { lastError } : {}),
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
      })
      .catch((err: unknown) => log.warn('pool did not take the scale-set demand', { pool: settings.pool, error: String(err) }));
  }

  /** Runners learn of their job from the message (no webhook is needed); runners not ours are ignored. */
  async function tellRunners(message: Extract<PollResult, { kind: 'message' }>): Promise<void> {
    const sends: Promise<unknown>[] = [];
    for (const s of message.started) {
      sends.push(pool.signal(jobProgressSignal, { jobId: s.requestId, action: 'in_progress', runnerName: s.runnerName }));
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
      state.scaleSetId = (await calls.ensureScaleSet({ target, name: settings.name, runnerGroup: settings.runnerGroup, labels: settings.labels })).id;
    }
    const opened = await calls.openScaleSetSession({ target, scaleSetId: state.scaleSetId, ownerName: settings.ownerName });
    if (opened.outcome === 'scale_set_gone') {
      state.scaleSetId = undefined;
      return false;
    }
    if (opened.outcome === 'conflict') {
      // Another listener holds the scale set: never poll beside it; ask again later.
      status = 'conflict';
      lastError = opened.message;
      await condition(() => stop !== undefined, t.scaleSetConflictRetryMs);
      return false;
    }
    state.sessionId = opened.sessionId;
    state.sessionsOpened += 1;
    status = 'listening';
    lastError = undefined;
    if (opened.statistics) state.statistics = opened.statistics;
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
    if (message.available.length > 0) {
      const acquired = await calls.acquireScaleSetJobs({ ...ref, requestIds: message.available });
      if ('sessionLost' in acquired) {
        state.sessionId = undefined;
        return;
      }
      state.jobsAcquired += acquired.acquired.length;
    }
    if (message.statistics) state.statistics = message.statistics;
    await tellPool();
    await tellRunners(message);
    // The effect is in this workflow's history now: safe to let the service forget the message.
    state.lastMessageId = message.messageId;
    state.messagesApplied += 1;
    state.recentMessageIds = [...state.recentMessageIds, message.messageId].slice(-RECENT_IDS_KEPT);
    if ((await calls.ackScaleSetMessage({ ...ref, messageId: message.messageId })) === 'session_lost') state.sessionId = undefined;
  }

  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  function historyFull(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > historyLimit;
  }
  while (stop === undefined) {
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
    let polled: PollResult | undefined;
    try {
      poll = new CancellationScope();
      polled = await poll.run(() =>
        polls.pollScaleSetMessage({ target, scaleSetId: state.scaleSetId!, sessionId, lastMessageId: state.lastMessageId, maxCapacity: settings.maxRunners }),
      );
    } catch (err) {
      if (!isCancellation(err)) throw err;
    } finally {
      poll = undefined;
    }
    if (stop !== undefined || polled === undefined) break;
    if (polled.kind === 'session_lost') {
      status = 'reconnecting';
      lastError = `message session ${sessionId} was lost`;
      state.sessionId = undefined;
    } else if (polled.kind === 'message') {
      await apply(polled, sessionId);
    }
    if (stop === undefined && historyFull()) {
      await continueAsNew<typeof scaleSetListener>({ ...input, settings, carried: state });
    }
  }

  status = 'stopping';
  if (state.scaleSetId !== undefined && state.sessionId !== undefined) {
    await calls.closeScaleSetSession({ target, scaleSetId: state.scaleSetId, sessionId: state.sessionId });
    state.sessionId = undefined;
  }
  // A scale set this listener never held a session on belongs to another listener: it is not ours to delete.
  if (stop?.deleteScaleSet && state.scaleSetId !== undefined && state.sessionsOpened > 0) await calls.deleteScaleSet({ target, scaleSetId: state.scaleSetId });
  status = 'stopped';
  return view();
}
