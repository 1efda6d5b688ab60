/**
 * runnerInstance: one runner from the request to create it until it is gone.
 *
 * pending_create → creating → running → pending_delete → deleting → deleted,
 * with error → pending_delete when creation fails for good (GARM), and a
 * forceDelete signal that cuts in anywhere and always ends the workflow.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  TimeoutFailure,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ForceDeleteActivities } from '../activities/force-delete-activities';
import type { CreatedInstance, InlineCreateOutcome, InstanceActivities } from '../activities/instance-activities';
import { mintedIn } from '../domain/minted-credential';
import type { InstanceStatus, RunnerStatus } from '../domain/instance-status';
import { isLeaving } from '../domain/instance-status';
import { FAILURE_TYPES, type RetryAfterDetails } from '../domain/failure-types';
import { cleanupSearchAttributes, cleanupWorkflowId, MACHINE_CLEANUP_WORKFLOW, type MachineCleanupInput } from './cleanup-messages';
import { HealthWatch } from './instance-health';
import { InstanceRecord } from './instance-record';
import {
  deleteSignal,
  forceDeleteSignal,
  RUNNER_INSTANCE_WORKFLOW,
  healthReportSignal,
  reportPhaseSignal,
  INSTANCE_MESSAGE_DESCRIPTIONS,
  jobCompletedSignal,
  jobStartedSignal,
  runnerStatusSignal,
  sealedCredentialQuery,
  stateQuery,
  type InstanceState,
  type JobCompletedArgs,
  type JobStartedArgs,
  type RunnerInstanceInput,
} from './messages';
import { healthReportArgs, jobArgs, reasonOf, runnerStatusArgs, warnOfUnknownSignals } from './signal-input';
import { runnerLifecycle } from './lifecycle-sink';
import type { PoolActivities, ReportToPoolArgs } from '../activities/pool-activities';

/** Room, beyond the provider's bound, for starting the clean-up workflow. */
const FORCE_HANDOVER_MARGIN_MS = 5_000;

export async function runnerInstance(input: RunnerInstanceInput): Promise<InstanceState> {
  const t = input.timings;
  const heartbeatTimeout = t.heartbeatTimeoutMs;
  const activityOptions = (options: ActivityOptions) => proxyActivities<InstanceActivities>(options);

  const createAttemptTimeout = Math.min(t.createAttemptTimeoutMs, input.spec.bootstrapTimeoutMs);
  const createRetry = {
    initialInterval: t.createInitialIntervalMs,
    maximumInterval: t.createMaxIntervalMs,
    backoffCoefficient: 2,
    maximumAttempts: t.createMaxAttempts,
    nonRetryableErrorTypes: [...CREATE_NON_RETRYABLE],
  };
  const create = activityOptions({ startToCloseTimeout: createAttemptTimeout, heartbeatTimeout, retry: createRetry });
  // After an inline first attempt that failed, one attempt fewer is left.
  const createAfterFailedInline = activityOptions({ startToCloseTimeout: createAttemptTimeout, heartbeatTimeout, retry: { ...createRetry, maximumAttempts: t.createMaxAttempts - 1 } });
  // The activity cuts the attempt off at the provider's own bound; this only backs it up.
  const createInline = proxyLocalActivities<InstanceActivities>({
    startToCloseTimeout: Math.min(createAttemptTimeout, INLINE_ATTEMPT_CEILING_MS),
    retry: { maximumAttempts: 1 },
  });
  // GARM's delete backoff: 1 s doubling, capped at 5 minutes, until the provider succeeds.
  // No maximumAttempts: unlimited. Retries live inside the activity, so a provider failing
  // for hours adds no history events.
  const remove = activityOptions({
    startToCloseTimeout: t.deleteAttemptTimeoutMs,
    heartbeatTimeout,
    retry: {
      initialInterval: t.deleteInitialIntervalMs,
      backoffCoefficient: t.deleteBackoffCoefficient,
      maximumInterval: t.deleteMaxIntervalMs,
      nonRetryableErrorTypes: [...DELETE_NON_RETRYABLE],
    },
  });
  const removeInline = proxyLocalActivities<InstanceActivities>({
    startToCloseTimeout: Math.min(t.deleteAttemptTimeoutMs, INLINE_ATTEMPT_CEILING_MS),
    retry: { maximumAttempts: 1 },
  });
  const github = activityOptions({
    startToCloseTimeout: t.githubAttemptTimeoutMs,
    retry: { initialInterval: t.githubInitialIntervalMs, maximumInterval: t.githubMaxIntervalMs, backoffCoefficient: 2 },
  });
  const probe = activityOptions({ startToCloseTimeout: t.githubAttemptTimeoutMs, retry: { maximumAttempts: 3 } });
  // Local: no round trip through the server's activity queue, and its result is recorded before the workflow goes on.
  // Retried a few times, so the hand-over survives a blip; each attempt is bounded by its own deadline.
  const forceDeleteStep = proxyLocalActivities<ForceDeleteActivities>({
    startToCloseTimeout: t.forceDeleteAttemptTimeoutMs + FORCE_HANDOVER_MARGIN_MS,
    retry: { initialInterval: 50, maximumAttempts: 3 },
  });

  // Local: a direct signal from the worker (batched per pool), not a command the server carries out later.
  // Tried until the server takes it, for as long as a restart of the server lasts: five tries in
  // about two seconds gave up during one, and a runner whose last report, "deleted", was given
  // up held its place in its pool until the pool's look for ended runners. A signal the server
  // refuses for good is not tried again (activities/pool-activities.ts). Runners started before
  // the timing replay trying five times.
  const poolReports = proxyLocalActivities<PoolActivities>(
    t.poolReportTimeoutMs === undefined
      ? { startToCloseTimeout: 10_000, retry: { initialInterval: 100, maximumAttempts: 5 } }
      : { startToCloseTimeout: 10_000, scheduleToCloseTimeout: t.poolReportTimeoutMs, retry: { initialInterval: 100, backoffCoefficient: 2, maximumInterval: 5_000 } },
  );

  const record = new InstanceRecord(input);
  const lifecycle = new CancellationScope();
  let force: { reason: string } | undefined;
  let deleteRequest: { reason: string } | undefined = input.resume?.deleteRequest;
  let jobFinished = input.resume?.jobFinished ?? false;
  let createAttempted = input.resume !== undefined;
  /** A create is under way at the provider: a forced delete now cuts it off. */
  let createInFlight = false;
  const completedJobs = new Set<number>(input.resume?.completedJobs ?? []);
  const health = new HealthWatch({
    record,
    timings: t,
    observe: () => probe.observeRunner({ ...deleteArgs(), github: input.spec.github, ...(record.githubRunnerId !== undefined ? { githubRunnerId: record.githubRunnerId } : {}) }),
    leavingAnyway: () => deleteRequest !== undefined || record.runnerStatus === 'failed' || (input.spec.ephemeral && jobFinished),
  });

  let sealedJitConfig: string | undefined = input.resume?.sealedJitConfig;

  const labels = { pool: input.pool, provider: input.provider };
  let createStartedAt: number | undefined;
  function setRunnerStatus(status: RunnerStatus): void {
    if (record.runnerStatus === status || record.status === 'deleted') return;
    record.runnerStatus = status;
    if (createStartedAt !== undefined && (status === 'idle' || status === 'active')) {
      runnerLifecycle.bootstrapped({ ...labels, seconds: (Date.now() - createStartedAt) / 1000 });
      createStartedAt = undefined;
    }
    notifyPool();
  }

  let reportSeq = input.resume?.reportSeq ?? 0;
  let reportedPhase = (input.resume?.reportedPhase ?? 'starting') as PoolPhase;
  // A resumed instance has long been running and reported so.
  let reportedRunning = input.resume !== undefined;
  const reports = new Set<Promise<void>>();
  /**
   * An ephemeral runner whose job is done deletes its machine at once, mostly within the
   * workflow task that heard the job end. Told "leaving" and then "deleted" a moment later, the
   * pool would take two signals and two workflow tasks where the second says all it needs:
   * busy and leaving hold capacity alike and neither takes a job. So "leaving" waits for the
   * inline delete attempt, and is sent only if that attempt does not remove the machine
   * (the activity then takes over, which may take long) or a forced delete cuts in.
   */
  let leavingReportHeld = false;
  function holdLeavingReport(): void {
    // (patched: runners that reported leaving first replay so.)
    if (input.notifyPool && record.status === 'running' && !isLeaving(record.status, record.runnerStatus) && patched('ephemeral-runner-reports-deleted-without-leaving')) leavingReportHeld = true;
  }
  function releaseLeavingReport(): void {
    if (!leavingReportHeld) return;
    leavingReportHeld = false;
    notifyPool();
  }

  /**
   * Set once a forced delete has told the pool the runner is gone: every way out of a forced
   * delete ends in "deleted", so nothing after that tells the pool anything else.
   */
  let deletedAnnounced = false;

  /**
   * Changes made within one workflow task go to the pool as one report, of where they ended: a
   * runner's agent comes online and its job starts a few milliseconds apart, so both signals
   * mostly land in one task, and "idle" followed at once by "busy" would cost the pool a signal
   * (at a few jobs a second, a workflow task) and this runner a local activity for a phase the
   * pool can no longer act on. The report is made in a microtask, which runs once every signal
   * handler of the task has (the SDK applies a task's signals in one batch, then its microtasks),
   * or at once where the workflow is about to wait for its reports.
   * (patched: runners that reported every change replay so.)
   */
  const coalesceReports = input.notifyPool === true && patched('pool-reports-coalesced-per-task');
  let reportQueued = false;
  function notifyPool(): void {
    if (!coalesceReports) return reportPhase();
    if (reportQueued) return;
    reportQueued = true;
    void Promise.resolve().then(flushQueuedReport);
  }
  function flushQueuedReport(): void {
    if (!reportQueued) return;
    reportQueued = false;
    reportPhase();
  }
  /** Every report made so far, delivered (or given up). */
  async function reportsSent(): Promise<void> {
    flushQueuedReport();
    await Promise.all([...reports]);
  }

  /**
   * Only changes the pool decides on are reported (idle, busy, leaving, gone): every report
   * costs a workflow task on both sides, and under a burst those add up.
   */
  function reportPhase(): void {
    if (!input.notifyPool || deletedAnnounced) return;
    const phase = poolPhase(record.status, record.runnerStatus);
    if (phase === 'leaving' && leavingReportHeld) return;
    // The agent can report idle before the create activity returns: the pool must still hear that the machine runs.
    const nowRunning = record.status === 'running' && !reportedRunning && (phase === 'idle' || phase === 'busy');
    if (phase === reportedPhase && !nowRunning) return;
    reportedPhase = phase;
    reportedRunning = record.status === 'running';
    sendReport(record.status);
  }

  function sendReport(status: InstanceStatus): void {
    reportSeq += 1;
    const report = {
      name: input.name,
      seq: reportSeq,
      status,
      runnerStatus: record.runnerStatus,
      ...(record.jobId !== undefined ? { jobId: record.jobId } : {}),
    };
    // Not cancellable: a forced delete cancels the lifecycle scope, but the pool must still hear of it.
    // The pool may be gone (deleted, or continuing as new); the instance must not care.
    const sent = CancellationScope.nonCancellable(() => poolReports.reportToPool({ pool: input.pool, report }))
      .catch((err: unknown) => log.debug('pool not notified', { pool: input.pool, error: String(err) }))
      .finally(() => reports.delete(sent));
    reports.add(sent);
  }

  /**
   * A forced delete ends "deleted" whatever the provider does: the machine is gone, or handed to
   * its clean-up, which the pool does not count either. Said at the start, the report travels
   * beside the forced step instead of after it, which takes one signal's round trip off the
   * forced close, and "leaving" need not be said first.
   */
  function announceDeleted(): void {
    reportQueued = false;
    leavingReportHeld = false;
    reportedPhase = 'deleted';
    deletedAnnounced = true;
    sendReport('deleted');
  }

  /**
   * The report "deleted" as it will be once the inline delete removes the machine, for that
   * activity to send (see `deleteInstanceInline`): the runner's closing task then runs one local
   * activity instead of two. Not after a forced delete has said "deleted", and not while a
   * report of this task is still queued: that one goes first, under the number this would take.
   * (patched: runners that reported after their delete replay so.)
   */
  function reportOfMachineGone(): ReportToPoolArgs | undefined {
    if (!input.notifyPool || deletedAnnounced || reportQueued || !patched('gone-report-with-the-inline-delete')) return undefined;
    return {
      pool: input.pool,
      report: { name: input.name, seq: reportSeq + 1, status: 'deleted', runnerStatus: record.runnerStatus, ...(record.jobId !== undefined ? { jobId: record.jobId } : {}) },
    };
  }
  /** The pool has "deleted" from the inline delete: the move to deleted says nothing more. */
  function goneReported(seq: number): void {
    reportSeq = seq;
    reportedPhase = 'deleted';
    leavingReportHeld = false;
  }

  /** The current phase once more, under a new sequence number, for a pool that missed it. */
  function reportAgain(): void {
    if (deletedAnnounced) return sendReport('deleted');
    reportedPhase = 'starting';
    notifyPool();
  }

  function moveTo(...args: Parameters<InstanceRecord['moveTo']>): void {
    record.moveTo(...args);
    notifyPool();
  }

  // Handlers are set only now that everything they touch exists. A signal that reached the
  // workflow before this run's first task (sent with the start, or carried over a continue-as-new)
  // is delivered inside `setHandler` itself; set earlier, a handler would read a variable not yet
  // initialised, fail that task and every retry of it, and leave the runner stuck.
  setHandler(stateQuery, () => record.snapshot(), { description: INSTANCE_MESSAGE_DESCRIPTIONS.state });
  setHandler(sealedCredentialQuery, () => sealedJitConfig, { description: INSTANCE_MESSAGE_DESCRIPTIONS.sealedCredential });
  setHandler(forceDeleteSignal, (args) => {
    if (force || record.status === 'deleted') return;
    force = { reason: reasonOf(args, 'force delete requested') };
    lifecycle.cancel();
  }, { description: INSTANCE_MESSAGE_DESCRIPTIONS.forceDelete });
  setHandler(deleteSignal, (args) => {
    // The pool asks again until it hears the runner leave. Asked again while on its way out,
    // the runner says so again: the report that said so was lost (the pool busy or continuing
    // as new past its retries), and the pool would otherwise ask every leaveReaskInterval for
    // as long as a busy job or a failing delete lasts, growing this history with every ask.
    // (patched: runners that let repeated asks be replay so.)
    if (deleteRequest && isLeaving(record.status, record.runnerStatus) && patched('repeated-ask-to-leave-reported-again')) reportAgain();
    deleteRequest ??= { reason: reasonOf(args, 'delete requested') };
  }, { description: INSTANCE_MESSAGE_DESCRIPTIONS.delete });
  setHandler(jobStartedSignal, (args) => {
    const job = jobArgs<JobStartedArgs>('jobStarted', args);
    // Redeliveries and late in_progress events after completion change nothing.
    if (!job || completedJobs.has(job.jobId) || record.jobId === job.jobId) return;
    // An ephemeral runner runs one job: a start under another id once that job is over is the same
    // job under the other id GitHub gives it (a scale set's request id beside the webhook's job id),
    // delivered late. Taken, it would show a leaving runner busy again. (patched: runners that took
    // one replay taking it.)
    if (input.spec.ephemeral && jobFinished && patched('finished-ephemeral-runner-ignores-job-starts')) return;
    record.jobId = job.jobId;
    setRunnerStatus('active');
    const waited = Date.parse(job.startedAt ?? '') - Date.parse(job.queuedAt ?? '');
    if (waited >= 0) runnerLifecycle.jobStarted({ pool: input.pool, provider: input.provider, queueSeconds: waited / 1000 });
  }, { description: INSTANCE_MESSAGE_DESCRIPTIONS.jobStarted });
  setHandler(jobCompletedSignal, (args) => {
    const job = jobArgs<JobCompletedArgs>('jobCompleted', args);
    if (!job || completedJobs.has(job.jobId)) return;
    completedJobs.add(job.jobId);
    // A static runner's late `completed` for its last job, arriving after its next job started,
    // does not make it idle mid-job: it would be scaled down as idle. (patched: runners that
    // took such a report replay taking it.)
    if (!input.spec.ephemeral && record.runnerStatus === 'active' && record.jobId !== undefined && record.jobId !== job.jobId && patched('late-completion-of-an-earlier-job-ignored')) {
      log.info('completion of an earlier job; the runner is still busy with its next', { runner: input.name, completed: job.jobId, busyWith: record.jobId });
      return;
    }
    record.jobId = job.jobId;
    jobFinished = true;
    if (input.spec.ephemeral) holdLeavingReport();
    // An ephemeral runner takes one job and then unregisters itself from GitHub; a static one is idle again.
    setRunnerStatus(input.spec.ephemeral ? 'terminated' : 'idle');
  }, { description: INSTANCE_MESSAGE_DESCRIPTIONS.jobCompleted });
  setHandler(runnerStatusSignal, (args) => {
    const report = runnerStatusArgs(args);
    if (!report || (record.runnerStatus === 'active' && report.status === 'idle')) return;
    // A registered runner does not install again: such a report can only come from a job on the
    // machine (the status callback takes the instance's token), and would reopen the metadata
    // service's credentials to it. (patched: runners that took one replay taking it.)
    const registered = record.runnerStatus === 'idle' || record.runnerStatus === 'active' || record.runnerStatus === 'terminated';
    if (registered && report.status === 'installing' && patched('registered-runner-does-not-install-again')) {
      log.warn('ignored a report that a registered runner is installing again', { runner: input.name, runnerStatus: record.runnerStatus, reported: report.status });
      return;
    }
    if (report.status === 'failed' && report.message) record.lastError = `runner reported failure: ${report.message}`;
    setRunnerStatus(report.status);
  }, { description: INSTANCE_MESSAGE_DESCRIPTIONS.runnerStatus });
  /** GitHub no longer lists this runner while it leaves busy: an ephemeral runner's job is over. */
  let githubListsNoRunner = false;
  setHandler(healthReportSignal, (args) => {
    const report = healthReportArgs(args);
    if (!report) return;
    if (report.finding === 'runner_missing' && record.status === 'pending_delete') githubListsNoRunner = true;
    health.report(report);
  }, { description: INSTANCE_MESSAGE_DESCRIPTIONS.healthReport });
  setHandler(reportPhaseSignal, () => reportAgain(), { description: INSTANCE_MESSAGE_DESCRIPTIONS.reportPhase });
  warnOfUnknownSignals(RUNNER_INSTANCE_WORKFLOW, [forceDeleteSignal, deleteSignal, jobStartedSignal, jobCompletedSignal, runnerStatusSignal, healthReportSignal, reportPhaseSignal].map((s) => s.name));

  /** The history length of the workflow task whose inline create made the machine, until something deletes it. */
  let inlineCreateTask: number | undefined;
  /**
   * A local activity's marker reaches the history only with the workflow task that ran it. A task
   * that creates the machine inline and deletes it again (the job already over when the runner's
   * first task ran, a forced delete already asked for) and is then lost (its worker killed, or its
   * completion refused for a signal that came meanwhile) is run again without either marker: the
   * create finds no machine, the lost task having deleted it, and makes a second. Ending the task
   * with a timer first records the create, so the run again sees it done. A task that does not
   * delete what it created needs nothing: the repeated create finds the machine there.
   * (patched: runners that created and deleted in one task replay so.)
   */
  async function createRecordedBeforeDelete(): Promise<void> {
    const sameTask = inlineCreateTask !== undefined && workflowInfo().historyLength === inlineCreateTask;
    inlineCreateTask = undefined;
    if (sameTask && patched('inline-create-recorded-before-its-delete')) await sleep(1);
  }

  async function createMachine(): Promise<void> {
    moveTo('creating');
    createStartedAt = Date.now();
    createAttempted = true;
    createInFlight = true;
    try {
      const created = await createOnce();
      createInFlight = false;
      record.providerId = created.providerId;
      if (created.githubRunnerId !== undefined) record.githubRunnerId = created.githubRunnerId;
      if (created.sealedJitConfig !== undefined) sealedJitConfig = created.sealedJitConfig;
      record.lastError = undefined;
      moveTo('running', created.reused ? 'found the machine an earlier attempt created' : undefined);
    } catch (err) {
      if (isCancellation(err)) throw err;
      createInFlight = false;
      record.recordError(err);
      moveTo('error', 'create failed');
      moveTo('pending_delete', 'cleaning up after failed create');
    }
  }

  /**
   * The first attempt inline where the provider answers quickly (see `createInstanceInline`):
   * measured on 1,000 runners, that took a fifth of the machine's CPU per runner off the
   * orchestration. (patched: runners created before it replay their ordinary activity.)
   */
  async function createOnce(): Promise<CreatedInstance> {
    const args = { name: input.name, pool: input.pool, provider: input.provider, spec: input.spec };
    if (!patched('inline-create-attempt')) return create.createInstance(args);
    let first: InlineCreateOutcome;
    try {
      first = await createInline.createInstanceInline(args);
    } catch (err) {
      if (isCancellation(err) || !retryable(err, CREATE_NON_RETRYABLE)) throw err;
      // The provider may have made the machine after all: the next attempt then finds it, and can
      // only pass on the JIT config this one minted.
      const minted = mintedIn(failureDetails(err));
      const next = minted ? { ...args, minted } : args;
      // Only slow: the provider is asked again at once, by attempts with the whole attempt timeout,
      // and as many of them as if the inline one had not been made.
      if (cutOff(err)) return create.createInstance(next);
      if (t.createMaxAttempts <= 1) throw err;
      record.recordError(err);
      // A failure costs an attempt and the usual first backoff. A rate limit says when to try
      // again: the next attempt waits for it, as the activity's own retries would.
      await sleep(Math.max(t.createInitialIntervalMs, retryAfterMs(err) ?? 0));
      return createAfterFailedInline.createInstance(next);
    }
    if (!first.inline) return create.createInstance(args);
    inlineCreateTask = workflowInfo().historyLength;
    return first.created;
  }

  /**
   * Waits until the runner has a reason to leave and says what it is. A healthy runner
   * waits here on signals alone (no timer), for as long as it idles.
   */
  async function untilLeaving(): Promise<{ reason: string; unregister: boolean }> {
    const registered = () => record.runnerStatus === 'idle' || record.runnerStatus === 'active' || jobFinished;
    const failed = () => record.runnerStatus === 'failed';
    const leaving = () => failed() || deleteRequest !== undefined || (input.spec.ephemeral && jobFinished);
    const creatingSince = Date.parse(record.transitions.find((tr) => tr.to === 'creating')?.at ?? new Date().toISOString());
    // The first wait always carries the bootstrap timer, as it did before liveness existed:
    // replaying an older history must issue the same commands.
    let firstWait = true;
    for (;;) {
      const wake = () => leaving() || health.reported || historyFull();
      if (firstWait || !registered()) {
        firstWait = false;
        const bootstrapLeft = Math.max(0, input.spec.bootstrapTimeoutMs - (Date.now() - creatingSince));
        const inTime = await condition(() => registered() || wake(), bootstrapLeft);
        if (!inTime) return { reason: `runner did not report idle within the bootstrap timeout (${input.spec.bootstrapTimeoutMs} ms)`, unregister: true };
      } else {
        await condition(wake);
      }
      if (deleteRequest) return { reason: deleteRequest.reason, unregister: true };
      if (failed()) return { reason: record.lastError ?? 'runner reported failure', unregister: true };
      // GitHub already removed the ephemeral runner when its job ended; asking again only spends rate limit.
      if (input.spec.ephemeral && jobFinished) return { reason: 'ephemeral runner finished its job', unregister: false };
      if (health.reported) {
        const reason = await health.settle();
        if (reason) return { reason, unregister: true };
      } else if (historyFull()) {
        await carryOn();
      }
    }
  }

  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  function historyFull(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > historyLimit;
  }

  /**
   * Continues as new with the same id and state, so signals (job events, health
   * reports, pool traffic) on a runner that lives for weeks never grow one history without bound.
   */
  async function carryOn(): Promise<never> {
    await reportsSent();
    await condition(allHandlersFinished);
    return continueAsNew<typeof runnerInstance>({
      ...input,
      resume: {
        state: record.snapshot(),
        jobFinished,
        completedJobs: [...completedJobs].slice(-100),
        ...(sealedJitConfig !== undefined ? { sealedJitConfig } : {}),
        reportSeq,
        reportedPhase,
        // Signals still come while the last reports go out; a delete among them is the operator's or the pool's word.
        ...(deleteRequest ? { deleteRequest } : {}),
      },
    });
  }

  /**
   * ARC's graceful stop: a busy runner is never deleted. An ephemeral one will leave
   * GitHub by itself after its job, so we wait for that instead of asking GitHub
   * again and again; a static one is asked again with a growing interval.
   */
  async function unregisterFromGitHub(): Promise<void> {
    let wait = t.busyRetryIntervalMs;
    const maxWait = t.busyRetryIntervalMs * 16;
    // A static runner asked to leave while busy can go on taking jobs for days, each one a round
    // of signals and a GitHub call here; an ephemeral one waits out a job of days. The resumed run
    // comes back here, as its status is pending_delete. (patched: runners that waited in one
    // history replay so.)
    const boundsHistory = patched('leaving-runner-continues-as-new');
    for (;;) {
      if (jobFinished && input.spec.ephemeral) return;
      if (boundsHistory && historyFull()) await carryOn();
      const outcome = await github.removeGitHubRunner({
        github: input.spec.github,
        ...(input.spec.scaleSet ? { scaleSetId: input.spec.scaleSet.id } : {}),
        name: input.name,
        ...(record.githubRunnerId !== undefined ? { githubRunnerId: record.githubRunnerId } : {}),
      });
      if (outcome !== 'busy') return;
      if (record.runnerStatus !== 'active') setRunnerStatus('active');
      // GitHub keeps calling a runner busy until it fails the job the dead machine will never
      // finish. The GitHub-side sweep removes the registration once it is no longer busy.
      // But an idle runner leaves on one listing's word, and GitHub saying it has a job
      // contradicts that listing: a second look decides before a machine that may be running
      // the job is deleted. (patched: histories from before it replay without the look.)
      if (health.machineDead) {
        if (!patched('second-look-when-a-dead-machine-is-busy') || (await machineStopped({ errorIsDead: true }))) return;
        health.machineDead = false;
      }
      if (input.spec.ephemeral) {
        // The completed webhook may be lost, and a machine whose boot script does not power off
        // stays up after its job. GitHub removes an ephemeral runner once its job is done, and the
        // liveness check's GitHub pass (one listing per scope) says when it no longer lists it.
        // (patched: runners that waited only for the webhook or a stopped machine replay so.)
        const heedsGitHub = patched('leaving-ephemeral-runner-heeds-github');
        while (!(await condition(() => jobFinished || (heedsGitHub && githubListsNoRunner), wait))) {
          // A stopped machine means the job is over too.
          if (await machineStopped()) return;
          if (boundsHistory && historyFull()) await carryOn();
          wait = Math.min(wait * 2, maxWait);
        }
        if (!jobFinished) log.info('job over: GitHub no longer lists the busy ephemeral runner', { runner: input.name });
        return;
      }
      jobFinished = false;
      // A static runner's machine may die while we wait for its job: do not wait on it forever.
      // (patched: histories from before this check must replay without the extra activity.)
      if (!(await condition(() => jobFinished, wait)) && patched('static-busy-runner-machine-probe') && (await machineStopped())) return;
      wait = Math.min(wait * 2, maxWait);
    }
  }

  /**
   * A provider that cannot answer says nothing about the machine: the caller waits and asks again.
   * Letting the failure through would fail the workflow, so the pool would never hear the runner
   * went, and the sweep would later delete a machine whose job may still be running.
   */
  async function machineStopped(options: { errorIsDead?: boolean } = {}): Promise<boolean> {
    try {
      const machine = await probe.instanceStatus(deleteArgs());
      return machine === 'stopped' || machine === 'gone' || (options.errorIsDead === true && machine === 'error');
    } catch (err) {
      if (isCancellation(err)) throw err;
      record.recordError(err);
      return false;
    }
  }

  function deleteArgs() {
    return { provider: input.provider, name: input.name, pool: input.pool, ...(record.providerId ? { providerId: record.providerId } : {}) };
  }

  /** Set once the graceful path is done with GitHub: removed, never registered, or left to the GitHub sweep. */
  let githubSettled = false;
  /** Workflow time at which the graceful path asked the provider to delete the machine. */
  let providerDeleteAskedAt: number | undefined;

  async function gracefulDelete(unregister: boolean): Promise<void> {
    if (unregister && createAttempted) await unregisterFromGitHub();
    githubSettled = true;
    moveTo('deleting');
    providerDeleteAskedAt = Date.now();
    await deleteOnce();
    moveTo('deleted');
  }

  /**
   * The first attempt inline where the provider answers quickly (see `deleteInstanceInline`):
   * an ephemeral runner whose job is done then closes in the workflow task that heard so,
   * with no activity task and no further workflow task. (patched: runners that reached their
   * delete before it replay their ordinary activity.)
   */
  async function deleteOnce(): Promise<void> {
    await createRecordedBeforeDelete();
    const args = deleteArgs();
    if (!patched('inline-delete-attempt')) return remove.deleteInstance(args);
    try {
      const goneReport = reportOfMachineGone();
      const outcome = await removeInline.deleteInstanceInline(goneReport ? { ...args, goneReport } : args);
      if (outcome.inline) {
        if (goneReport && outcome.reported === true) goneReported(goneReport.report.seq);
        return;
      }
    } catch (err) {
      // Whatever comes next (the activity, a forced delete, a failed workflow) outlasts the
      // inline attempt: the pool hears now that the runner is leaving.
      releaseLeavingReport();
      if (isCancellation(err) || !retryable(err, DELETE_NON_RETRYABLE)) throw err;
      // Only slow: the activity asks again at once. A failure waits the first backoff, as the
      // activity's own retries would between two attempts (and, like theirs, is not kept as the
      // runner's last error: the delete goes on, and the failure stays in the history's marker).
      if (!cutOff(err)) await sleep(t.deleteInitialIntervalMs);
    }
    releaseLeavingReport();
    return remove.deleteInstance(args);
  }

  /**
   * Closes at once whatever the provider does. One delete attempt bounded by
   * forceDeleteAttemptTimeout; a machine not confirmed gone within it is handed
   * to its own machineCleanup workflow (started durably, before this one closes),
   * which retries with the usual backoff until it is gone and stays findable as
   * leaked until then. Waiting here instead would hold the forced delete to the
   * provider's pace, which is what an operator forcing it is trying to escape.
   */
  async function forcedDelete(reason: string): Promise<void> {
    record.forced = true;
    // (patched: runners whose forced delete reported after the forced step replay so.)
    if (input.notifyPool && patched('forced-delete-reports-deleted-at-once')) announceDeleted();
    // The forced step may hand the machine over instead of deleting it: the pool hears of it now.
    else releaseLeavingReport();
    if (record.status !== 'pending_force_delete') moveTo('pending_force_delete', reason);
    moveTo('deleting', 'forced');
    if (!createAttempted) {
      runnerLifecycle.forceDeleted({ ...labels, leaked: false });
      moveTo('deleted', 'forced before any machine was created');
      return;
    }
    // An operator forces a delete mostly because the graceful one hangs or keeps failing. A
    // provider that has not confirmed it for longer than the forced attempt's bound would only
    // be given the bound again: the machine goes straight to its clean-up, which retries at once.
    const unconfirmed = providerDeleteAskedAt === undefined ? 0 : Date.now() - providerDeleteAskedAt;
    const machine: Omit<MachineCleanupInput, 'githubRemoved'> = {
      name: input.name,
      pool: input.pool,
      provider: input.provider,
      ...(record.providerId ? { providerId: record.providerId } : {}),
      github: input.spec.github,
      ...(record.githubRunnerId !== undefined ? { githubRunnerId: record.githubRunnerId } : {}),
      ...(input.spec.scaleSet ? { scaleSetId: input.spec.scaleSet.id } : {}),
      timings: t,
      reason,
      // The cut-off attempt's provider call can go on for as long as an attempt may run.
      ...(createInFlight ? { createMayLandWithinMs: createAttemptTimeout } : {}),
    };
    let handedTo: string | undefined;
    try {
      await createRecordedBeforeDelete();
      const outcome = await forceDeleteStep.forceDeleteMachine({
        ...machine,
        boundMs: t.forceDeleteAttemptTimeoutMs,
        ...(githubSettled ? { githubRemoved: true } : {}),
        ...(unconfirmed >= t.forceDeleteAttemptTimeoutMs ? { providerUnconfirmedMs: unconfirmed } : {}),
      });
      if (!outcome.machineGone) {
        record.lastError = outcome.error;
        record.markLeaked();
        handedTo = outcome.cleanupWorkflowId;
      }
    } catch (err) {
      record.recordError(err);
      record.markLeaked();
      // The step could not start the clean-up (Temporal unreachable from the worker's client for
      // all its retries). The workflow's own commands reach the server with its task, so it starts
      // the clean-up itself: every machine not confirmed gone then has one, and the list of
      // running clean-ups is the whole list of leaks. (patched: runners that closed before it
      // replay their close without the child.)
      if (patched('clean-up-child-when-the-hand-over-fails')) handedTo = await startCleanupChild({ ...machine, githubRemoved: githubSettled });
    }
    runnerLifecycle.forceDeleted({ ...labels, leaked: record.leaked });
    moveTo(
      'deleted',
      !record.leaked ? 'forced' : handedTo ? `forced; the provider did not confirm the delete, ${handedTo} retries it until the machine is gone` : 'forced; the provider did not confirm the delete, machine left for the sweep',
    );
  }

  /** Starts the machine's clean-up as a child that outlives this workflow; waits until the server has it. */
  async function startCleanupChild(cleanup: MachineCleanupInput): Promise<string> {
    const workflowId = cleanupWorkflowId(cleanup.name);
    try {
      await startChild(MACHINE_CLEANUP_WORKFLOW, {
        workflowId,
        args: [cleanup],
        parentClosePolicy: 'ABANDON',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: cleanupSearchAttributes(cleanup),
      });
    } catch (err) {
      // Started after all by an attempt of the step whose answer was lost: the machine is in hand.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    return workflowId;
  }

  try {
    await lifecycle.run(async () => {
      if (!input.resume) {
        if (deleteRequest) {
          moveTo('pending_delete', deleteRequest.reason);
          return gracefulDelete(false);
        }
        await createMachine();
      }
      let unregister = true;
      if (record.status === 'running') {
        const leaving = await untilLeaving();
        unregister = leaving.unregister;
        moveTo('pending_delete', leaving.reason);
      }
      await gracefulDelete(unregister);
    });
  } catch (err) {
    if (!isCancellation(err)) {
      // A failure that no retry will fix (a provider taken out of the configuration) fails the
      // workflow, and a report still in flight would be dropped with it: the pool would go on
      // counting the runner as it last heard (busy, say) until its audit finds the failed
      // workflow. (patched: runners that failed before it replay their failure as it was.)
      if (patched('failed-runner-sends-its-last-reports')) await reportsSent();
      throw err;
    }
    // A cancelled workflow (e.g. `temporal workflow cancel`) is treated like a forced delete:
    // ending without cleaning up is how machines leak.
    force ??= { reason: 'workflow cancelled' };
  }
  if (force && record.status !== 'deleted') {
    const reason = force.reason;
    await CancellationScope.nonCancellable(() => forcedDelete(reason));
  }
  // A signal still in flight when the workflow closes is dropped: the pool must hear "deleted".
  await reportsSent();
  return record.snapshot();
}

/** Failures that no further attempt would change. */
const CREATE_NON_RETRYABLE = [FAILURE_TYPES.unknownProvider, FAILURE_TYPES.githubRejected];
const DELETE_NON_RETRYABLE = [FAILURE_TYPES.unknownProvider];

/** Backs up the provider's own inline bounds (config: `inlineCreateTimeout`, `inlineDeleteTimeout`, at most 8 s). */
const INLINE_ATTEMPT_CEILING_MS = 9_000;

/** What the activity itself failed with, under the ActivityFailure that wraps it. */
function causeOf(err: unknown): unknown {
  return err instanceof ActivityFailure ? err.cause : err;
}

function retryAfterMs(err: unknown): number | undefined {
  const cause = causeOf(err);
  const details = cause instanceof ApplicationFailure ? (cause.details?.[0] as Partial<RetryAfterDetails> | undefined) : undefined;
  return typeof details?.retryAfterMs === 'number' ? details.retryAfterMs : undefined;
}

/** The attempt ran out of time (its own deadline, or the local activity's timeout) rather than failing. */
function failureDetails(err: unknown): unknown {
  const cause = causeOf(err);
  return cause instanceof ApplicationFailure ? cause.details?.[0] : undefined;
}

function cutOff(err: unknown): boolean {
  const cause = causeOf(err);
  return cause instanceof TimeoutFailure || (cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.attemptDeadline);
}

function retryable(err: unknown, nonRetryableTypes: readonly string[]): boolean {
  const cause = causeOf(err);
  if (!(cause instanceof ApplicationFailure)) return true;
  return !cause.nonRetryable && !nonRetryableTypes.includes(cause.type ?? '');
}

/** Well below Temporal's limits; the server may also suggest continuing earlier. */
const DEFAULT_HISTORY_LIMIT = 2_000;

type PoolPhase = 'starting' | 'idle' | 'busy' | 'leaving' | 'deleted';

function poolPhase(status: InstanceStatus, runnerStatus: RunnerStatus): PoolPhase {
  if (status === 'deleted') return 'deleted';
  if (isLeaving(status, runnerStatus)) return 'leaving';
  if (runnerStatus === 'active') return 'busy';
  if (runnerStatus === 'idle') return 'idle';
  return 'starting';
}
