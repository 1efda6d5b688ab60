/**
 * runnerPool: holds a pool's settings and keeps the right number of
 * runnerInstance workflows alive. Instances are started as workflows of their
 * own (activities/pool-activities.ts says why not children): they outlive the
 * pool's continue-as-new and report back with `runnerChanged`.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  isCancellation,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { GitHubSweepActivities } from '../activities/github-sweep-activities';
import type { PoolActivities } from '../activities/pool-activities';
import type { PoolAuditActivities } from '../activities/pool-audit-activities';
import type { RelayActivities } from '../activities/relay-activities';
import type { PoolSettings } from '../domain/pool';
import { scaleSetChanges, scaleSetIdentityOf, scaleSetNameOf } from '../domain/scale-set';
import type { InstanceTimings } from '../domain/timings';
import { deleteSignal, runnerWorkflowId, type RunnerInstanceInput } from './messages';
import { LEAVE_REASK_MS, PoolBook } from './pool-book';
import { poolMemoOf } from './pool-memo';
import {
  auditPoolSignal,
  deletePoolSignal,
  GLANCE_TIMER_SUMMARY,
  jobProgressSignal,
  jobQueuedSignal,
  jobsQueuedSignal,
  knownJobsQuery,
  POOL_MESSAGE_DESCRIPTIONS,
  recentRepositoriesQuery,
  poolStateQuery,
  RUNNER_POOL_WORKFLOW,
  startedRunnersQuery,
  unheardRunnersQuery,
  countedRunnersQuery,
  registeredRunnersQuery,
  runnerChangedSignal,
  runnersChangedSignal,
  updatePoolSignal,
  type PoolView,
  type QueuedJob,
  type RunnerPoolInput,
} from './pool-messages';
import { PoolScaleSet } from './pool-scale-set';
import { jobProgressArgs, queuedJobsArgs, reasonOf, runnerChangedArgs, runnerReportsArgs, scaleSetDemandArgs, warnOfUnknownSignals } from './signal-input';
import { SCALE_SET_MESSAGE_DESCRIPTIONS, scaleSetDemandSignal } from './scale-set-messages';
import { RUNNER_POOL } from './search-attributes';

/** The pool's carried state, at most: the server's payload limit is 2 MB, and the input also holds the settings. */
const MAX_CARRIED_BYTES = 1_800_000;

/** Runner workflows started by one activity: a burst to a large maxRunners goes as several, side by side. */
const START_BATCH = 50;

/**
 * Short on purpose. A busy pool's continue-as-new usually races a signal: the
 * server refuses the task once (UnhandledCommand), the SDK drops the pool from
 * its cache and replays its whole history, and until that replay is done the
 * pool decides nothing and the server refuses signals to it. That pause grows
 * with the history: about 2.3 s at 4,000 events, 0.25 – 0.7 s at 500 (faster and
 * slower host); at 250 each pause was a third shorter, but there were twice as
 * many and no fewer of them refused. Measured at
 * 10 jobs/s (bench/README.md): queue-to-start p99 about 3 s at 4,000 (a pause
 * every 30 s), 1 s at 1,000, 0.2 s at 500. Each continue-as-new carries the
 * pool's whole state, so a pool holding thousands of queued jobs pays for the
 * more frequent ones (the intake bench's p99 rose).
 */
const DEFAULT_HISTORY_LIMIT = 500;
const EARLIER_HISTORY_LIMIT = 4_000;

/**
 * Every start's input travels in the decision's commands, and a workflow task
 * completion larger than the server's gRPC limit (4 MB) makes the server
 * terminate the workflow: a pool asked for thousands of idle runners at once
 * died on its first decision. A few hundred per decision keeps it far below.
 */
const MAX_STARTS_PER_DECISION = 250;

/**
 * An ordinary activity, not a local one: a local activity holds the pool's
 * workflow task open until every start has returned, and under load that
 * stalled every decision behind it. Retried until the server takes the starts:
 * the runners are already counted against maxRunners, and an undecided start
 * must not be forgotten (a runner counted nowhere could exceed the maximum).
 * Starting is idempotent by id.
 *
 * Both steps heartbeat (`poolStepHeartbeatTimeout`): a step whose worker died is otherwise
 * retried only when its minute is up, and meanwhile the pool cannot continue as new (it waits
 * for its steps to return), so a busy pool whose history was full made no runner at all for that
 * minute (found by the chaos campaign: a worker killed during a start, jobs waiting 60 – 100 s).
 */
const starterWith = (heartbeatTimeout: number) =>
  proxyActivities<PoolActivities>({
    startToCloseTimeout: 60_000,
    heartbeatTimeout,
    retry: { initialInterval: 200, backoffCoefficient: 2, maximumInterval: 10_000 },
  });

/**
 * Jobs a closing pool passes on were acknowledged to GitHub already: retried until they land.
 */
const passOnWith = (heartbeatTimeout: number) =>
  proxyActivities<RelayActivities>({
    startToCloseTimeout: 60_000,
    heartbeatTimeout,
    retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 30_000 },
  });

/** Jobs per pass-on call: one signal's worth, well inside Temporal's payload limit. */
const PASS_ON_BATCH = 500;

/**
 * A missed look is only late: the next one is due an interval later. It heartbeats on the
 * pool's step timeout as the starts do: a pool due to continue as new waits for it too.
 */
const auditorWith = (heartbeatTimeout: number) =>
  proxyActivities<PoolAuditActivities>({
    startToCloseTimeout: 120_000,
    heartbeatTimeout,
    retry: { initialInterval: 1_000, maximumInterval: 10_000, maximumAttempts: 3 },
  });

/** For pools whose input predates `poolAuditIntervalMs`. */
const DEFAULT_AUDIT_INTERVAL_MS = 10 * 60_000;

/** For pools whose input predates `poolStepHeartbeatTimeoutMs`. */
const DEFAULT_STEP_HEARTBEAT_MS = 10_000;
/** For pools whose input predates `poolGlanceIntervalMs`. */
const DEFAULT_GLANCE_INTERVAL_MS = 2_000;

const registrations = proxyActivities<GitHubSweepActivities>({
  startToCloseTimeout: 120_000,
  retry: { initialInterval: 1_000, maximumInterval: 10_000, maximumAttempts: 3 },
});

/**
 * What a deleted pool's runners may leave at GitHub (a dead busy runner's
 * registration, a removal that failed) is removed before the pool closes:
 * once it is gone no sweep looks at its scope. A registration GitHub still
 * calls busy (its machine died mid-job) is asked for again until GitHub gives
 * the job up, bounded by twice the busy-runner grace, then left with a warning.
 */
async function removeLeftRegistrations(settings: PoolSettings, timings: InstanceTimings): Promise<void> {
  const giveUpAt = Date.now() + 2 * timings.busyRunnerLostGraceMs;
  let wait = timings.busyRetryIntervalMs;
  for (;;) {
    let left: string[];
    try {
      const report = await registrations.removePoolRegistrations({ settings });
      if (report.removed.length > 0) log.info('removed registrations the pool left at GitHub', { pool: settings.name, runners: report.removed });
      left = [...report.left, ...report.failed];
    } catch (err) {
      left = [String(err)];
    }
    if (left.length === 0) return;
    if (Date.now() + wait > giveUpAt) {
      log.warn('registrations left at GitHub after the pool was deleted', { pool: settings.name, left });
      return;
    }
    await sleep(wait);
    wait = Math.min(wait * 2, timings.busyRetryIntervalMs * 16);
  }
}

/** How the SDK reports a signal to a workflow that does not exist or has ended. */
function isNotFoundFailure(err: unknown): boolean {
  return err instanceof Error && /not found/i.test(err.message);
}

export async function runnerPool(input: RunnerPoolInput): Promise<PoolView> {
  // Loaded here rather than imported: every workflow the worker creates evaluates the modules
  // imported at the top, and runners have no use for zod. Resolved before this task issues any
  // command or sets any handler (signals wait for their handler), so histories replay the same.
  const { poolSettingsArgs } = await import(/* webpackMode: "eager" */ './pool-settings-input');
  // Pools whose history predates re-asking silent leavers replay without its timers.
  // Pools begun before starts were marked write off only runners that have reported.
  const startedCounts = patched('count-started-runners-as-existing');
  const book = new PoolBook(input.settings, input.timings, input.carried, {
    reaskLeaving: patched('reask-silent-leavers'),
    packQueue: patched('packed-queue'),
    startedCounts,
    retriedReports: patched('reports-of-a-retried-runner-task'),
    jobMeansReady: patched('runner-that-took-a-job-was-ready'),
  });
  const stepHeartbeat = input.timings.poolStepHeartbeatTimeoutMs ?? DEFAULT_STEP_HEARTBEAT_MS;
  const starter = starterWith(stepHeartbeat);
  const passOn = passOnWith(stepHeartbeat);
  const auditor = auditorWith(stepHeartbeat);
  const scaleSet = new PoolScaleSet(input.timings);
  let dirty = true;
  // Pools begun before it replay holding the jobs they were given while disabled or deleting.
  const passesJobsOn = patched('closing-pool-passes-jobs-on');
  let passesInFlight = 0;

  upsertSearchAttributes([{ key: RUNNER_POOL, value: input.settings.name }]);
  // A run continued while deleting writes the mark again, in case its memo did not come along.
  if (passesJobsOn && book.deleting) upsertMemo({ deleting: true });
  setHandler(poolStateQuery, () => book.view(), { description: POOL_MESSAGE_DESCRIPTIONS.poolState });
  setHandler(startedRunnersQuery, () => book.startedRunners(), { description: POOL_MESSAGE_DESCRIPTIONS.startedRunners });
  setHandler(unheardRunnersQuery, () => book.unheardRunners(), { description: POOL_MESSAGE_DESCRIPTIONS.unheardRunners });
  setHandler(countedRunnersQuery, () => book.countedRunners(), { description: POOL_MESSAGE_DESCRIPTIONS.countedRunners });
  setHandler(registeredRunnersQuery, () => book.registeredRunners(), { description: POOL_MESSAGE_DESCRIPTIONS.registeredRunners });
  setHandler(knownJobsQuery, ({ jobIds }) => book.knownJobs(Array.isArray(jobIds) ? jobIds : []), { description: POOL_MESSAGE_DESCRIPTIONS.knownJobs });
  setHandler(recentRepositoriesQuery, () => book.repositories.newestFirst(), { description: POOL_MESSAGE_DESCRIPTIONS.recentRepositories });
  setHandler(updatePoolSignal, (args) => {
    // A signal sent by hand is held to what the API holds new settings to: extra specs, labels or
    // an image past their caps would make every batch of runner starts too large for the server,
    // for good; a fraction of a millisecond is no duration a timer can keep. (patched: pools that
    // took such settings replay taking them.)
    const checks = patched('update-signal-durations-whole-ms')
      ? 'wholeMs'
      : patched('update-signal-runner-settings-capped')
        ? 'all'
        : patched('update-signal-extra-specs-capped')
          ? 'extraSpecs'
          : 'none';
    const settings = poolSettingsArgs(args, { checks });
    if (!settings) return;
    if (settings.name !== book.settings.name) {
      log.warn('ignored settings for another pool', { pool: book.settings.name, got: settings.name });
      return;
    }
    // The API refuses a mode change (409 mode_change); a signal sent by hand must not make one
    // either: a pool leaving scale-set mode would leave its listener (started to outlive it)
    // polling for good. (patched: pools that took such a signal replay taking it.)
    if (settings.mode !== book.settings.mode && patched('mode-change-refused-in-signal')) {
      log.warn('ignored settings that change the pool mode: delete the pool and create it again', { pool: book.settings.name, mode: book.settings.mode, got: settings.mode });
      return;
    }
    // Nor a change of the scale set, which the API refuses too (409 scale_set_change): the
    // listener would stay on the scale set it holds, and the pool would show settings that are
    // not in force. A new runner group or name is no such change: the listener moves or renames
    // the scale set. (patched: pools that took such a signal replay taking it; pools that refused
    // a new runner group or name replay refusing it.)
    const scaleSetChanged = book.settings.mode === 'scaleSet' ? scaleSetChanges(scaleSetIdentityOf(book.settings), settings).map((c) => c.path) : [];
    if (book.settings.mode === 'scaleSet' && settings.mode === 'scaleSet' && scaleSetNameOf(settings) !== scaleSetNameOf(book.settings) && !patched('scale-set-renamed-in-place')) {
      scaleSetChanged.unshift('scaleSet.name');
    }
    if (book.settings.mode === 'scaleSet' && settings.runnerGroup !== book.settings.runnerGroup && scaleSetChanged.length === 0 && !patched('scale-set-runner-group-moves-in-place')) {
      scaleSetChanged.push('runnerGroup');
    }
    if (scaleSetChanged.length > 0 && patched('scale-set-change-refused-in-signal')) {
      log.warn('ignored settings that change the scale set: delete the pool and create it again', { pool: book.settings.name, fields: scaleSetChanged });
      return;
    }
    book.updateSettings(settings);
    upsertMemo({ ...poolMemoOf(settings) });
    dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.updatePool });
  setHandler(deletePoolSignal, () => {
    // Routing leaves a deleting pool out once visibility shows this mark.
    if (passesJobsOn && !book.deleting) upsertMemo({ deleting: true });
    book.startDeleting();
    dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.deletePool });
  function queued(jobs: QueuedJob[]): void {
    const now = Date.now();
    const dropped = book.queuedJobsDropped;
    for (const job of jobs) if (book.jobQueued(job, now)) dirty = true;
    if (book.queuedJobsDropped > dropped) {
      log.warn('queued jobs not kept: the pool holds as many as it keeps', { pool: book.settings.name, dropped: book.queuedJobsDropped - dropped, total: book.queuedJobsDropped });
    }
  }
  setHandler(jobQueuedSignal, (job) => queued(queuedJobsArgs('jobQueued', [job])), { description: POOL_MESSAGE_DESCRIPTIONS.jobQueued });
  setHandler(jobsQueuedSignal, (args) => queued(queuedJobsArgs('jobsQueued', (args as { jobs?: unknown } | undefined)?.jobs)), { description: POOL_MESSAGE_DESCRIPTIONS.jobsQueued });
  // Every handler checks its input: one that threw would fail this workflow task, and the same
  // signal would fail every retry of it, leaving the pool stuck for good.
  setHandler(jobProgressSignal, (args) => {
    const progress = jobProgressArgs(args);
    if (progress && book.jobProgress(progress, Date.now())) dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.jobProgress });
  setHandler(runnerChangedSignal, (args) => {
    const report = runnerChangedArgs(args);
    if (report && book.runnerChanged(report, Date.now())) dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.runnerChanged });
  setHandler(scaleSetDemandSignal, (args) => {
    const demand = scaleSetDemandArgs(args);
    if (demand && book.scaleSetDemand(demand)) dirty = true;
  }, { description: SCALE_SET_MESSAGE_DESCRIPTIONS.scaleSetDemand });

  setHandler(runnersChangedSignal, (args) => {
    const now = Date.now();
    for (const report of runnerReportsArgs(args)) if (book.runnerChanged(report, now)) dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.runnersChanged });
  /** Set by `auditPool`: the next look comes as soon as the one before allows (`nextLookAt`). */
  let lookAsked = false;
  setHandler(auditPoolSignal, (args) => {
    // A worker from before this signal dropped it unhandled: a history it wrote replays so.
    if (!patched('look-when-asked')) return;
    log.info('asked to look for runners that ended unreported', { pool: book.settings.name, reason: reasonOf(args, 'no reason given') });
    lookAsked = true;
    dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.auditPool });
  warnOfUnknownSignals(
    RUNNER_POOL_WORKFLOW,
    [updatePoolSignal, deletePoolSignal, jobQueuedSignal, jobsQueuedSignal, jobProgressSignal, runnerChangedSignal, runnersChangedSignal, scaleSetDemandSignal, auditPoolSignal].map((s) => s.name),
  );

  function instanceInput(name: string): RunnerInstanceInput {
    const s = book.settings;
    return {
      name,
      pool: s.name,
      provider: s.provider,
      spec: {
        github: s.github,
        labels: s.labels,
        image: s.image,
        flavor: s.flavor,
        osType: s.osType,
        osArch: s.osArch,
        extraSpecs: s.extraSpecs,
        runnerGroup: s.runnerGroup,
        runnerGroupId: s.runnerGroupId,
        ephemeral: s.ephemeral,
        bootstrapTimeoutMs: s.bootstrapTimeout,
        ...book.scaleSetRef(),
      },
      timings: input.timings,
      poolSettingsVersion: book.settingsVersion,
      notifyPool: true,
    };
  }

  // Starts are not awaited by the loop: under a burst the pool keeps deciding while
  // a batch is being started, instead of one round trip per batch.
  let startsInFlight = 0;
  /** Start batches that have returned, however they ended: each return brings a workflow task. */
  let startsReturned = 0;
  function createRunners(count: number): void {
    if (count <= 0) return;
    const now = Date.now();
    const runners: RunnerInstanceInput[] = [];
    for (let i = 0; i < count; i++) {
      const name = book.nextRunnerName(uuid4().replace(/-/g, '').slice(0, 10));
      book.runnerStarted(name, now);
      runners.push(instanceInput(name));
    }
    for (let i = 0; i < runners.length; i += START_BATCH) startBatch(runners.slice(i, i + START_BATCH));
  }

  /**
   * A pool that takes no jobs (see `PoolBook.closedToJobs`) passes its queue on, a batch at a
   * time: the queue stays the buffer, carried across continue-as-new in its packed form, and
   * jobs routed here before routing knew join it. Not awaited, as starts are not.
   */
  function passJobsOn(): void {
    if (!passesJobsOn || !book.closedToJobs || passesInFlight > 0) return;
    const jobs = book.takeQueuedJobs(PASS_ON_BATCH);
    if (jobs.length === 0) return;
    passesInFlight += 1;
    passOn
      .passOnJobs({ from: workflowInfo().workflowId, jobs })
      .then(({ passedOn, unmatched }) => log.info('queued jobs passed on: this pool takes none now', { pool: book.settings.name, passedOn, unmatched }))
      .catch((err: unknown) => log.warn('queued jobs not passed on', { pool: book.settings.name, jobs: jobs.map((j) => j.jobId), error: String(err) }))
      .finally(() => {
        passesInFlight -= 1;
        dirty = true;
      });
  }

  function startBatch(runners: RunnerInstanceInput[]): void {
    startsInFlight += 1;
    starter
      .startRunners({ runners })
      .then(({ notStarted }) => {
        for (const { name, error } of notStarted) {
          log.warn('runner workflow not started', { runner: name, error });
          book.runnerNotStarted(name);
        }
        // The rest exist from here on: one that ends before its first report (terminated while
        // it was still creating, say) is then told from one whose start is on its way.
        const refused = new Set(notStarted.map((n) => n.name));
        book.runnersStarted(runners.map((r) => r.name).filter((name) => !refused.has(name)));
        // A decision (in the task this return brings anyway) arms the look for them.
        if (notStarted.length > 0 || startedCounts) dirty = true;
      })
      // Retried until the server answers; should it give up, the runners stay counted (never more than maxRunners).
      .catch((err: unknown) => log.warn('runner starts undecided', { runners: runners.map((r) => r.name), error: String(err) }))
      .finally(() => {
        startsInFlight -= 1;
        startsReturned += 1;
      });
  }

  // Pools begun before it replay keeping runners whose workflow ended unreported.
  const dropsEndedRunners = patched('drop-runners-whose-workflow-ended');
  function askToLeave(name: string, reason: string): void {
    book.markDeleteRequested(name, reason, Date.now());
    getExternalWorkflowHandle(runnerWorkflowId(name))
      .signal(deleteSignal, { reason })
      .catch((err: unknown) => {
        log.warn('delete not delivered', { runner: name, error: String(err) });
        // A runner that has reported exists, so "not found" means its workflow has ended without
        // the report that says so (terminated by an operator, say). Kept, it would hold capacity
        // for good and keep a deleted pool from ever closing. One that has not reported yet may
        // still be starting: it is asked again later.
        if (dropsEndedRunners && isNotFoundFailure(err) && book.runnerEnded(name)) {
          log.warn('runner workflow ended without telling the pool: no longer counted', { pool: book.settings.name, runner: name });
          dirty = true;
        }
      });
  }

  /**
   * A runner whose workflow ended without its last report (terminated by hand) is counted
   * until the pool finds out: an idle one is never replaced and a busy one holds capacity.
   * An ask to leave finds out (above), but a pool that never asks, one kept at its
   * minimum say, needs to look: every `poolAuditIntervalMs`, carried across
   * continue-as-new so a busy pool's frequent runs do not put it off for good.
   * (patched: pools that never looked replay without it.)
   */
  const audits = patched('audit-ended-runners');
  const auditEvery = input.timings.poolAuditIntervalMs ?? DEFAULT_AUDIT_INTERVAL_MS;
  let auditDueAt = input.carried?.auditDueAt ?? Date.now() + auditEvery;
  // The look starts every interval after the last, so the last one's time carries in its due time.
  let lastAuditAt = auditDueAt - auditEvery;
  let auditsInFlight = 0;
  /**
   * Runners on their way out that have gone silent bring the look forward (see
   * `silentLeaversDueAt`), at most once per `leaveReaskInterval`: a runner whose last report was
   * given up would otherwise hold its place, and keep a deleted pool open, for up to the whole
   * interval. (patched: pools that looked only every interval replay so.)
   */
  const looksForSilentLeavers = audits && patched('early-look-for-silent-leavers');
  const silentMs = input.timings.leaveReaskIntervalMs ?? LEAVE_REASK_MS;
  function earlyAuditAt(): number | undefined {
    if (!looksForSilentLeavers) return undefined;
    const due = book.silentLeaversDueAt(lastAuditAt, silentMs, auditEvery);
    return due === undefined ? undefined : Math.max(due, lastAuditAt + silentMs);
  }
  // Only scale-set pools record the patch: a webhook pool has no listener to look for.
  const looksForListener = audits && book.settings.mode === 'scaleSet' && patched('look-for-listener');
  /** When this run last looked; undefined until it has (`lastAuditAt` starts at a look it assumes). */
  let lookedAt: number | undefined;
  /**
   * When the next look is due: every interval, sooner for silent leavers, and, once asked
   * (`auditPool`), at once or `leaveReaskInterval` after this run's last look: a sender that
   * asks over and over gets a look per interval, not one per signal.
   */
  function nextLookAt(): number {
    const asked = !lookAsked ? Infinity : lookedAt === undefined ? Number.NEGATIVE_INFINITY : lookedAt + silentMs;
    return Math.min(auditDueAt, earlyAuditAt() ?? Infinity, asked);
  }
  function auditRunners(now: number): void {
    if (!audits || auditsInFlight > 0) return;
    if (now < nextLookAt()) return;
    lookAsked = false;
    lookedAt = now;
    lastAuditAt = now;
    auditDueAt = now + auditEvery;
    if (looksForListener) void scaleSet.ensureListening(book.settings, book.deleting, book.scaleSetRef().scaleSet?.id);
    if (!book.hasStartedRunners()) return;
    auditsInFlight += 1;
    auditor
      .findEndedRunners({ pool: book.settings.name, poolWorkflowId: workflowInfo().workflowId })
      .then(({ ended }) => {
        for (const name of ended) {
          if (!book.runnerEnded(name)) continue;
          log.warn('runner workflow ended without telling the pool: no longer counted', { pool: book.settings.name, runner: name });
          dirty = true;
        }
      })
      .catch((err: unknown) => log.warn('runners not audited; looked for again at the next interval', { pool: book.settings.name, error: String(err) }))
      .finally(() => {
        auditsInFlight -= 1;
        // A decision to arm the next look: a quiet pool would otherwise not look again until a signal came.
        dirty = true;
      });
  }

  /**
   * One timer for the next moment the pool must look again by itself (a queued
   * job's expiry, an idle timeout, the end of a backoff). Waiting with
   * `condition(..., timeout)` started a timer in every decision and cancelled it
   * in the next: two history events and a server timer task per decision, on the
   * workflow every job and runner report passes through, for a deadline that
   * seldom moved. This timer is replaced only by an earlier one; when it fires
   * for a deadline that has since moved later, the pool plans once for nothing
   * and arms the right one.
   */
  let wake: { at: number; scope: CancellationScope } | undefined;
  function wakeAt(at: number): void {
    if (wake && wake.at <= at) return;
    wake?.scope.cancel();
    const timer = { at, scope: new CancellationScope() };
    wake = timer;
    timer.scope
      .run(() => sleep(Math.max(1, at - Date.now())))
      .then(() => {
        if (wake === timer) wake = undefined;
        dirty = true;
      })
      .catch((err: unknown) => {
        if (!isCancellation(err)) throw err;
      });
  }

  /**
   * Waits for whatever brings the pool's next workflow task: a report, a job, or one of the
   * start batches just scheduled returning, which always comes. It waited on a 1 ms timer,
   * but a busy server fired that timer 1 to 4 s late, and a pool scaling up by a thousand
   * runners sat idle that long between batches of starts (bench/README.md). Nothing here is
   * true before this task ends: `dirty` was just cleared and the batches have not returned.
   * (patched: pools that waited on the timer replay it.)
   */
  async function nextWorkflowTask(): Promise<void> {
    if (!patched('next-decision-on-any-wake')) return sleep(1);
    const returned = startsReturned;
    await condition(() => dirty || startsReturned !== returned);
  }

  /**
   * The pool's counts in its memo (`PoolGlance`), written by a decision that changed them, at most
   * every `poolGlanceInterval` (0: at every such decision). A change within the interval is
   * written once it is over, by a timer of its own: the last change of a burst must not wait for
   * the next signal, and the pool's steady wake is left alone (replacing it would cost a timer
   * cancelled and started again). A busy pool so starts at most one such timer per interval, and
   * a quiet one writes nothing. (patched: pools that decided without writing it replay so.)
   */
  const publishesGlance = patched('pool-publishes-its-glance');
  // Its digests change when one runner replaces another at the same counts, or a repository is
  // heard from, which the glance before them did not write for: pools that decided without them
  // replay without them.
  const glanceDigests = publishesGlance && patched('pool-glance-digests');
  // The same for the digest of the runners known to exist, added after them.
  const glanceStarted = glanceDigests && patched('pool-glance-started');
  let glanceWritten: string | undefined;
  let glanceWrittenAt = Number.NEGATIVE_INFINITY;
  let glanceTimerArmed = false;
  function publishGlance(now: number): void {
    if (!publishesGlance) return;
    const glance = book.glance(glanceDigests, glanceStarted);
    const key = JSON.stringify(glance);
    if (key === glanceWritten) return;
    const due = glanceWrittenAt + (input.timings.poolGlanceIntervalMs ?? DEFAULT_GLANCE_INTERVAL_MS);
    if (now >= due) {
      upsertMemo({ glance: { ...glance, at: now } });
      glanceWritten = key;
      glanceWrittenAt = now;
      return;
    }
    if (glanceTimerArmed) return;
    glanceTimerArmed = true;
    void sleep(due - now, { summary: GLANCE_TIMER_SUMMARY }).then(() => {
      glanceTimerArmed = false;
      dirty = true;
    });
  }

  // A run begun when pools continued as new only at 4,000 events keeps that limit: continuing
  // earlier on replay would be other commands for the same history.
  const historyLimit = input.historyLimit ?? (patched('short-pool-history') ? DEFAULT_HISTORY_LIMIT : EARLIER_HISTORY_LIMIT);
  const boundedStarts = patched('bounded-starts-per-decision');
  // Pools whose history predates the steady timer replay their per-decision timers.
  const steadyWake = patched('steady-wake-timer');
  // Signals that change nothing (a redelivered job, a job beyond the queue's bound, a stale
  // report) still grow the history: the pool wakes for a full history too, not only for news.
  const wakeOnFullHistory = patched('wake-on-full-history');
  const historyOverLimit = (): boolean => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > historyLimit;
  };
  const historyFull = (): boolean => wakeOnFullHistory && historyOverLimit();
  // The loop asks whether it is done before it awaits the scale set's step, and clears `dirty`
  // after: the last runner's report, handled during that await, would be slept through until
  // some later signal. (patched: pools that slept through it replay doing so.)
  const wakesWhenDone = patched('pool-wakes-when-done');
  const finished = (): boolean => wakesWhenDone && book.done;
  async function continueWhenSettled(): Promise<never> {
    await condition(() => startsInFlight === 0 && passesInFlight === 0 && auditsInFlight === 0 && allHandlersFinished());
    const { carried, dropped } = book.carryWithin(MAX_CARRIED_BYTES);
    if (dropped > 0) log.warn('queued jobs not kept: the pool state would not fit in one continue-as-new', { pool: book.settings.name, dropped, total: book.queuedJobsDropped });
    // A look asked for and not yet made is carried as a look due.
    const lookDueAt = lookAsked ? Math.min(auditDueAt, lookedAt === undefined ? Date.now() : lookedAt + silentMs) : auditDueAt;
    return continueAsNew<typeof runnerPool>({ ...input, settings: book.settings, carried: { ...carried, ...(audits ? { auditDueAt: lookDueAt } : {}) } });
  }
  /**
   * A decision that finds the history already full continues as new before it starts anything.
   * The server refuses a continue-as-new that races a signal; the SDK then replays the whole
   * history (about half a second at 500 events on a slow host), and the task after that, which
   * the server keeps free of new signals, brings the signals that caused the refusal. Starting
   * their runners there meant waiting for the starts to return before continuing, in a task open
   * to signals again: a second refusal and a second replay. The next run starts them in its first
   * task instead. Only after this run's first decision, so every run makes progress.
   * (patched: pools that decided in such a task replay doing so.)
   */
  const continuesBeforeNewWork = patched('full-history-continues-before-new-work');
  let decided = false;
  while (!book.done) {
    await scaleSet.sync(book.settings, book.settingsVersion, book.deleting, book.scaleSetRef().scaleSet?.id);
    if (continuesBeforeNewWork && decided && historyOverLimit()) await continueWhenSettled();
    decided = true;
    const plan = book.plan(Date.now());
    for (const { name, reason } of plan.remove) askToLeave(name, reason);
    // The ask is marked after the plan armed its wake: without a wake of its own, a runner the
    // ask missed would be asked again only when some other signal came.
    if (startedCounts && steadyWake && plan.remove.length > 0) wakeAt(Date.now() + (input.timings.leaveReaskIntervalMs ?? LEAVE_REASK_MS));
    passJobsOn();
    auditRunners(Date.now());
    // Pools whose history predates the bound replay their unbounded decisions unchanged.
    const maxStarts = boundedStarts ? (input.maxStartsPerDecision ?? MAX_STARTS_PER_DECISION) : Infinity;
    createRunners(Math.min(plan.create, maxStarts));
    publishGlance(Date.now());
    dirty = false;
    // More to start: the next decision follows in a workflow task of its own (a condition that
    // is already true would resolve within this one, and its starts would join this completion).
    if (plan.create > maxStarts) {
      await nextWorkflowTask();
      continue;
    }

    if (historyOverLimit()) await continueWhenSettled();
    if (steadyWake) {
      if (plan.wakeAt !== undefined) wakeAt(plan.wakeAt);
      // Only a pool with runners or a listener to look for wakes for it; one that gets some looks at its next decision.
      if (audits && auditsInFlight === 0 && (book.hasStartedRunners() || looksForListener)) wakeAt(nextLookAt());
      await condition(() => dirty || historyFull() || finished());
      continue;
    }
    const waitMs = plan.wakeAt !== undefined ? Math.max(1, plan.wakeAt - Date.now()) : undefined;
    if (waitMs === undefined) await condition(() => dirty || finished());
    else await condition(() => dirty || finished(), waitMs);
  }
  if (book.settings.mode === 'scaleSet') {
    // (patched: pools that ended before replay sending the stop without it.)
    const held = patched('stop-names-held-scale-set') ? book.scaleSetRef().scaleSet?.id : undefined;
    await scaleSet.finish(book.settings, 'pool deleted', held);
  }
  else if (patched('remove-registrations-on-delete')) await removeLeftRegistrations(book.settings, input.timings);
  // Jobs handed on are not dropped with the pool: the last of them reach their new pool first.
  while (passesJobsOn && (book.queuedJobCount > 0 || passesInFlight > 0)) {
    passJobsOn();
    await condition(() => passesInFlight === 0);
  }
  return book.view();
}
