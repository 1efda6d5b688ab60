/**
 * The pool's bookkeeping and scaling decisions, free of Temporal calls so the
 * rules can be read (and unit-tested) in one place. The runnerPool workflow
 * feeds it signals and carries out its plans.
 */
import { jsonBytes } from '../domain/json-size';
import type { RunnerStatus } from '../domain/instance-status';
import { isDeleting, isLeaving } from '../domain/instance-status';
import type { PoolSettings } from '../domain/pool';
import { desiredRunnerCount } from '../domain/scale-set';
import type { ScaleSetDemandArgs } from './scale-set-messages';
import type { InstanceTimings } from '../domain/timings';
import { RecentRepositories } from './recent-repositories';
import { countRunners, countStatuses } from '../domain/pool-counts';
import { nameSetDigest } from '../domain/name-set-digest';
import type { JobProgressArgs, PoolCarriedState, PoolGlance, PoolRunnerView, PoolView, QueuedJob, RunnerChangedArgs } from './pool-messages';
import { QueuedJobs } from './queued-jobs';

/** Job event keys remembered for de-duplication; old ones fall off (GitHub redelivers within hours, not weeks). */
const HANDLED_EVENTS_KEPT = 5_000;
/** Names of runners already gone, so a late out-of-order report cannot bring one back. */
const GONE_KEPT = 2_000;
/**
 * How long a runner asked to leave may stay silent before it is asked again, for
 * pools whose timings predate `leaveReaskIntervalMs`. The ask is a signal from the
 * pool that can miss: a runner whose start was still in flight does not exist yet,
 * and the signal fails with "not found". The runner's own delete handler is
 * idempotent, so asking twice is harmless.
 */
export const LEAVE_REASK_MS = 30_000;

interface RunnerEntry extends PoolRunnerView {
  /** Sequence number of the newest report applied. */
  seq: number;
  /** The server took its start: its workflow exists (or existed), reported or not. */
  started?: boolean;
  everReady: boolean;
  /** We asked it to leave (scale-down, replacement, pool deletion): its exit is not a bootstrap failure. */
  deleteRequested: boolean;
  /** When we last asked it to leave, and why; it is asked again until it reports leaving. */
  leaveAskedAt?: number;
  leaveReason?: string;
  failureCounted?: boolean;
}

export interface PoolPlan {
  create: number;
  /** Runners to delete gracefully, with the reason each is given. */
  remove: { name: string; reason: string }[];
  /** When to look again even if nothing is signalled (idle timeouts, backoff, queue expiry). */
  wakeAt?: number;
}

export class PoolBook {
  settings: PoolSettings;
  settingsVersion: number;
  runnerSeq: number;
  deleting: boolean;
  consecutiveBootstrapFailures: number;
  private backoffUntil = 0;
  private readonly runners = new Map<string, RunnerEntry>();
  private readonly queued: QueuedJobs;
  /** Queued jobs not kept because the queue was full. */
  queuedJobsDropped: number;
  private readonly handled: string[];
  private readonly handledSet: Set<string>;
  /** What the scale-set listener last reported (scale-set pools only). */
  private scaleSet?: PoolCarriedState['scaleSet'];
  /** Where the sweep looks for this pool's jobs whose queued webhook was lost, when it is an organisation's. */
  readonly repositories: RecentRepositories;
  private readonly gone: string[] = [];
  private readonly goneSet = new Set<string>();

  constructor(
    settings: PoolSettings,
    private readonly timings: InstanceTimings,
    carried?: PoolCarriedState,
    private readonly options: { reaskLeaving: boolean; packQueue?: boolean; maxQueued?: number; startedCounts?: boolean; retriedReports?: boolean; jobMeansReady?: boolean } = {
      reaskLeaving: true,
      packQueue: true,
      startedCounts: true,
      retriedReports: true,
      jobMeansReady: true,
    },
  ) {
    this.queued = new QueuedJobs(options.maxQueued);
    this.queuedJobsDropped = carried?.queuedJobsDropped ?? 0;
    this.settings = settings;
    this.settingsVersion = carried?.settingsVersion ?? 1;
    this.runnerSeq = carried?.runnerSeq ?? 0;
    this.deleting = carried?.deleting ?? false;
    this.consecutiveBootstrapFailures = carried?.consecutiveBootstrapFailures ?? 0;
    for (const { everReady, failureCounted, seq, ...r } of carried?.runners ?? []) {
      this.runners.set(r.name, {
        ...r,
        seq: seq ?? 0,
        // State carried before these were: a runner that took a job came online too.
        everReady: everReady ?? (r.runnerStatus === 'idle' || r.runnerStatus === 'active' || r.jobId !== undefined),
        deleteRequested: r.deleteRequested ?? false,
        ...(failureCounted ? { failureCounted } : {}),
      });
    }
    this.backoffUntil = carried?.backoffUntil ?? 0;
    this.queued.restore(carried?.queue, carried?.queuedJobs, Date.now());
    this.handled = [...(carried?.handledJobEvents ?? [])];
    for (const name of carried?.goneRunners ?? []) this.markGone(name);
    if (carried?.scaleSet) this.scaleSet = { ...carried.scaleSet };
    this.repositories = new RecentRepositories(carried?.recentRepositories);
    this.handledSet = new Set(this.handled);
  }

  private remember(key: string): boolean {
    if (this.handledSet.has(key)) return false;
    this.handled.push(key);
    this.handledSet.add(key);
    while (this.handled.length > HANDLED_EVENTS_KEPT) this.handledSet.delete(this.handled.shift()!);
    return true;
  }

  /** Returns false for a redelivery or for a job already seen further along. */
  jobQueued(job: QueuedJob, now: number): boolean {
    // A redelivery or a job not kept still says the repository queues jobs for this pool.
    this.repositories.record(job.repository, now);
    if (this.handledSet.has(`${job.jobId}:in_progress`) || this.handledSet.has(`${job.jobId}:completed`)) return false;
    if (this.handledSet.has(`${job.jobId}:queued`)) return false;
    // A job not kept is not remembered either: told again once there is room (the sweep does), it is taken.
    if (!this.queued.add(job, now)) {
      this.queuedJobsDropped += 1;
      return false;
    }
    this.remember(`${job.jobId}:queued`);
    return true;
  }

  jobProgress(args: JobProgressArgs, now: number): boolean {
    // A scale set's job has no `queued` webhook: its start is where the pool hears its repository.
    this.repositories.record(args.repository, now);
    if (!this.remember(`${args.jobId}:${args.action}`)) return false;
    const left = this.queued.delete(args.jobId);
    // The webhook names the runner that took the job, often before the runner's own report
    // arrives: knowing it is busy now keeps scale-down from picking it in the meantime.
    const runner = args.action === 'in_progress' && args.runnerName ? this.runners.get(args.runnerName) : undefined;
    if (runner && runner.runnerStatus !== 'active') {
      runner.runnerStatus = 'active';
      runner.jobId = args.jobId;
      runner.since = new Date(now).toISOString();
      runner.everReady = true;
    }
    return left || runner !== undefined || args.action === 'completed';
  }

  private jobTaken(jobId: number): void {
    this.remember(`${jobId}:in_progress`);
    this.queued.delete(jobId);
  }

  runnerChanged(args: RunnerChangedArgs, now: number): boolean {
    const at = new Date(now).toISOString();
    if (this.goneSet.has(args.name)) return false;
    const entry = this.runners.get(args.name);
    if (entry && this.stale(args, entry)) return false;
    // An idle report sent before the runner saw the job the webhook already told us about is stale.
    if (entry?.runnerStatus === 'active' && entry.jobId !== undefined && args.runnerStatus === 'idle' && args.jobId !== entry.jobId) return false;
    // A runner's report names the job it took: the job leaves the queue (the webhook no longer tells the pool).
    if (args.jobId !== undefined && args.runnerStatus !== 'idle') this.jobTaken(args.jobId);
    const ready = args.runnerStatus === 'idle' || args.runnerStatus === 'active' || this.tookAJob(args);
    if (args.status === 'deleted') {
      this.markGone(args.name);
      if (!entry) return false;
      this.runners.delete(args.name);
      if (!this.tookAJob(args)) this.noteBootstrapFailure(entry, now);
      return true;
    }
    const next: RunnerEntry = {
      name: args.name,
      seq: args.seq,
      status: args.status,
      runnerStatus: args.runnerStatus,
      ...(args.jobId !== undefined ? { jobId: args.jobId } : {}),
      settingsVersion: entry?.settingsVersion ?? this.settingsVersion,
      since: entry && entry.runnerStatus === args.runnerStatus && entry.status === args.status ? entry.since : at,
      everReady: (entry?.everReady ?? false) || ready,
      deleteRequested: entry?.deleteRequested ?? false,
      ...(entry?.leaveReason !== undefined ? { leaveReason: entry.leaveReason } : {}),
      // Not carried: a runner asked to leave that reports anything but leaving did not
      // hear the ask (one that hears it reports leaving at once, busy or not), so it is
      // due to be asked again now rather than when the interval runs out.
      ...(entry?.failureCounted ? { failureCounted: true } : {}),
    };
    this.runners.set(args.name, next);
    if (ready) this.consecutiveBootstrapFailures = 0;
    // Counted as soon as the runner leaves, so the backoff applies before its replacement is made.
    else if (!this.isLive(next)) this.noteBootstrapFailure(next, now);
    return true;
  }

  /**
   * Whether a report is older than the one applied. A runner numbers its reports in its workflow
   * code, but sends each from a local activity that runs before the workflow task that sent it is
   * recorded. When a worker dies between the two, the retried task numbers its reports from the
   * same point, and what it says under a number may differ from what the lost attempt said under
   * it: the lost attempt's failed first delete reported "deleting", the retry's delete went
   * through and reported "deleted", and the pool, dropping the second as a repeat, counted the
   * runner as leaving until its look for ended runners. So a number seen before is taken again
   * (the retry speaks after the lost attempt, and a true repeat changes nothing), and "deleted"
   * is taken whatever its number: it is a runner's last word, with nothing after it to overtake.
   * (Pools begun before replay dropping both.)
   */
  private stale(args: RunnerChangedArgs, entry: RunnerEntry): boolean {
    if (this.options.retriedReports !== true) return args.seq <= entry.seq;
    return args.seq < entry.seq && args.status !== 'deleted';
  }

  /**
   * A runner that names a job, or whose ephemeral job is over, came online whatever its reports
   * skipped: one report says where a runner's workflow task ended, and a runner whose agent came
   * up, took its job and finished it within one task (its worker busy or down meanwhile) is first
   * heard of as deleted. Counted as a failure to bootstrap, every such runner doubled the pool's
   * pause before its next start, and a pool under load stopped making runners with jobs queued.
   * (Pools begun before replay counting them.)
   */
  private tookAJob(args: RunnerChangedArgs): boolean {
    return this.options.jobMeansReady === true && (args.jobId !== undefined || args.runnerStatus === 'terminated');
  }

  /** A runner that leaves without ever having come online, unasked, failed to bootstrap. */
  private noteBootstrapFailure(entry: RunnerEntry, now: number): void {
    if (entry.everReady || entry.deleteRequested || entry.failureCounted) return;
    entry.failureCounted = true;
    this.bootstrapFailed(now);
  }

  private markGone(name: string): void {
    this.gone.push(name);
    this.goneSet.add(name);
    while (this.gone.length > GONE_KEPT) this.goneSet.delete(this.gone.shift()!);
  }

  private bootstrapFailed(now: number): void {
    this.consecutiveBootstrapFailures += 1;
    const delay = Math.min(
      this.timings.poolCreateBackoffInitialMs * 2 ** (this.consecutiveBootstrapFailures - 1),
      this.timings.poolCreateBackoffMaxMs,
    );
    this.backoffUntil = now + delay;
  }

  updateSettings(settings: PoolSettings): void {
    this.settings = settings;
    this.settingsVersion += 1;
  }

  startDeleting(): void {
    this.deleting = true;
  }

  /**
   * A pool being deleted, or disabled, makes no runners for its queue: its jobs are passed on
   * to pools that can take them. Held here, they would get no runner, and the pool would keep
   * claiming them (`knownJobs`), so that the look for lost jobs never routed them again either.
   */
  get closedToJobs(): boolean {
    // A scale-set pool's runners take only what the scale set assigns: a job routed to it by
    // webhook (before routing could tell) belongs with a webhook pool.
    return this.deleting || !this.settings.enabled || this.settings.mode === 'scaleSet';
  }

  /** The oldest `limit` queued jobs, taken out to be passed on; the pool no longer counts them. */
  takeQueuedJobs(limit: number): QueuedJob[] {
    return this.queued.take(limit);
  }

  get queuedJobCount(): number {
    return this.queued.size;
  }

  nextRunnerName(suffix: string): string {
    this.runnerSeq += 1;
    const base = (this.settings.runnerPrefix ?? this.settings.name).slice(0, 50);
    return `${base}-${suffix}`;
  }

  runnerStarted(name: string, now: number): void {
    this.runners.set(name, {
      name,
      seq: 0,
      status: 'pending_create',
      runnerStatus: 'pending',
      settingsVersion: this.settingsVersion,
      since: new Date(now).toISOString(),
      everReady: false,
      deleteRequested: false,
    });
  }

  /**
   * A runner the server refused to start holds no capacity. Not remembered as
   * gone: should it exist after all, its first report brings it back into the
   * book (and under maxRunners) instead of leaving it running unseen.
   */
  runnerNotStarted(name: string): void {
    this.runners.delete(name);
  }

  markDeleteRequested(name: string, reason?: string, now?: number): void {
    const entry = this.runners.get(name);
    if (!entry) return;
    entry.deleteRequested = true;
    if (reason !== undefined) entry.leaveReason = reason;
    if (now !== undefined) entry.leaveAskedAt = now;
  }

  /** The server took these runners' starts (or said they were already started). */
  runnersStarted(names: readonly string[]): void {
    for (const name of names) {
      const entry = this.runners.get(name);
      if (entry) entry.started = true;
    }
  }

  /**
   * Whether a runner's workflow is known to exist: it reported, or its start returned. Until
   * then "no such workflow" may only mean its start is still on the way. (Pools begun before
   * starts were marked go by reports alone.)
   */
  private existsFor(r: RunnerEntry): boolean {
    return r.seq > 0 || (this.options.startedCounts === true && r.started === true);
  }

  /**
   * A runner whose workflow has ended without the report that says so: gone, unless its
   * workflow is not known to exist yet. True when it was counted until now.
   */
  runnerEnded(name: string): boolean {
    const entry = this.runners.get(name);
    if (!entry || !this.existsFor(entry)) return false;
    this.markGone(name);
    this.runners.delete(name);
    return true;
  }

  /** Runners counted whose workflows are known to exist: an ended one can be told from one still starting. */
  startedRunners(): string[] {
    const names: string[] = [];
    for (const r of this.runners.values()) if (this.existsFor(r)) names.push(r.name);
    return names;
  }

  /**
   * Runners known to exist that have said nothing since their start but "starting": no report of
   * a machine that runs, of coming online, or of leaving. A runner whose machine runs while it
   * is listed here has a report the pool missed (see activities/pool-audit-activities.ts).
   */
  unheardRunners(): string[] {
    const names: string[] = [];
    for (const r of this.runners.values()) {
      if (this.existsFor(r) && !r.everReady && !r.deleteRequested && (r.status === 'pending_create' || r.status === 'creating')) names.push(r.name);
    }
    return names;
  }

  /**
   * Every runner the pool counts, started or still starting. A running workflow that names this
   * pool as the one that started it, but is missing here, holds a machine the pool does not
   * count against `maxRunners` and will never ask to leave.
   */
  countedRunners(): string[] {
    return [...this.runners.keys()];
  }

  /**
   * Runners the pool counts that have come online (reported idle or busy) at least once. Until
   * then GitHub lists a runner offline or not at all by nature, which is no news to it.
   */
  registeredRunners(): string[] {
    const names: string[] = [];
    for (const r of this.runners.values()) if (r.everReady) names.push(r.name);
    return names;
  }

  hasStartedRunners(): boolean {
    for (const r of this.runners.values()) if (this.existsFor(r)) return true;
    return false;
  }

  get done(): boolean {
    return this.deleting && this.runners.size === 0;
  }

  /** Runners asked to leave that have not reported leaving since: asked again, or woken for. */
  private reaskSilentLeavers(now: number, remove: PoolPlan['remove'], wake: number[]): void {
    for (const r of this.runners.values()) {
      if (!r.deleteRequested || isLeaving(r.status, r.runnerStatus)) continue;
      const interval = this.timings.leaveReaskIntervalMs ?? LEAVE_REASK_MS;
      const due = (r.leaveAskedAt ?? now - interval) + interval;
      if (due <= now) remove.push({ name: r.name, reason: r.leaveReason ?? (this.deleting ? 'pool deleted' : 'asked to leave') });
      else wake.push(due);
    }
  }

  /**
   * When the pool should look for ended runners before its interval runs out: a runner on its way
   * out says "deleted" as it ends, and one silent for `silentMs` since it last changed may have
   * ended without it (its report given up). Looked for after `silentMs`, then after twice as long
   * since it started leaving, and so on: a listing may still show a workflow that just closed, and
   * a slow delete is no reason to look often. Only moments after `after` (the last look) count,
   * and none as late as the interval's own look.
   */
  silentLeaversDueAt(after: number, silentMs: number, intervalMs: number): number | undefined {
    let due: number | undefined;
    for (const r of this.runners.values()) {
      if (!isLeaving(r.status, r.runnerStatus) || !this.existsFor(r)) continue;
      const since = Date.parse(r.since);
      let wait = silentMs;
      while (since + wait <= after && wait < intervalMs) wait *= 2;
      if (since + wait > after && wait < intervalMs && (due === undefined || since + wait < due)) due = since + wait;
    }
    return due;
  }

  /** Whether a runner can still take a job: not asked to leave, not on its way out. */
  private isLive(r: RunnerEntry): boolean {
    return !r.deleteRequested && !isLeaving(r.status, r.runnerStatus);
  }

  private static busy(status: RunnerStatus): boolean {
    return status === 'active';
  }

  /**
   * Drops reports older than the last one applied (signals may be reordered). Only one listener's
   * reports are ordered by `seq`: a listener started anew on the same scale set counts from 1
   * again, and would go unheard until its count passed its predecessor's. Its reports cannot be
   * overtaken by the old one's, which ended before it started (one workflow id) and waited for
   * each report to be delivered.
   */
  scaleSetDemand(args: ScaleSetDemandArgs): boolean {
    const last = this.scaleSet;
    if (last && args.scaleSetId === last.id && args.listener === last.listener && args.seq <= last.seq) return false;
    this.scaleSet = {
      id: args.scaleSetId,
      name: args.scaleSetName,
      totalAssignedJobs: args.totalAssignedJobs,
      seq: args.seq,
      ...(args.listener !== undefined ? { listener: args.listener } : {}),
    };
    return true;
  }

  /** The scale set new runners are made for; nothing for webhook pools. */
  scaleSetRef(): { scaleSet?: { id: number; name: string } } {
    return this.settings.mode === 'scaleSet' && this.scaleSet ? { scaleSet: { id: this.scaleSet.id, name: this.scaleSet.name } } : {};
  }

  /**
   * Runners wanted that are not busy. Webhook pools: min idle plus queued jobs.
   * Scale-set pools: actions-runner-controller's count minus the busy runners it
   * already includes (assigned jobs count running ones).
   */
  demand(): number {
    if (this.deleting || !this.settings.enabled) return 0;
    if (this.settings.mode === 'scaleSet') {
      if (!this.scaleSet) return 0;
      const desired = desiredRunnerCount(this.settings.scaleSet?.minRunners ?? 0, this.settings.maxRunners, this.scaleSet.totalAssignedJobs);
      const busy = [...this.runners.values()].filter((r) => this.isLive(r) && PoolBook.busy(r.runnerStatus)).length;
      return Math.max(0, desired - busy);
    }
    return this.settings.minIdleRunners + this.queued.size;
  }

  /** What to do now: scale up to cover demand within maxRunners, scale down expired idle runners, replace outdated ones. */
  plan(now: number): PoolPlan {
    const wake: number[] = [];
    const nextExpiry = this.queued.expire(now, this.timings.queuedJobTtlMs);
    if (nextExpiry !== undefined) wake.push(nextExpiry);
    const all = [...this.runners.values()];
    const live = all.filter((r) => this.isLive(r));
    const remove: PoolPlan['remove'] = [];

    if (this.options.reaskLeaving) this.reaskSilentLeavers(now, remove, wake);
    if (this.deleting) {
      for (const r of all) if (!r.deleteRequested && !isDeleting(r.status)) remove.push({ name: r.name, reason: 'pool deleted' });
      return { create: 0, remove, ...(wake.length > 0 ? { wakeAt: Math.min(...wake) } : {}) };
    }

    // Outdated idle runners are replaced; busy ones finish their job first.
    for (const r of live) {
      if (r.settingsVersion < this.settingsVersion && r.runnerStatus === 'idle') remove.push({ name: r.name, reason: 'pool settings changed' });
    }
    const leaving = new Set(remove.map((r) => r.name));
    const ready = live.filter((r) => !leaving.has(r.name) && !PoolBook.busy(r.runnerStatus));
    const demand = this.demand();

    let excess = ready.length - demand;
    const idle = ready
      .filter((r) => r.runnerStatus === 'idle')
      .sort((a, b) => Date.parse(a.since) - Date.parse(b.since));
    for (const r of idle) {
      if (excess <= 0) break;
      const expires = Date.parse(r.since) + this.settings.idleTimeout;
      if (expires <= now) {
        remove.push({ name: r.name, reason: `idle for longer than ${this.settings.idleTimeout} ms` });
        excess -= 1;
      } else {
        wake.push(expires);
      }
    }

    // Every runner whose machine may still exist counts against maxRunners, leaving ones included.
    let create = Math.max(0, Math.min(demand - ready.length, this.settings.maxRunners - all.length));
    if (create > 0 && now < this.backoffUntil) {
      wake.push(this.backoffUntil);
      create = 0;
    }
    return { create, remove, ...(wake.length > 0 ? { wakeAt: Math.min(...wake) } : {}) };
  }

  /** The given jobs this pool counts as queued or has a runner on. */
  knownJobs(jobIds: number[]): number[] {
    const onRunners = new Set<number>();
    for (const r of this.runners.values()) if (r.jobId !== undefined) onRunners.add(r.jobId);
    return jobIds.filter((id) => this.queued.has(id) || onRunners.has(id));
  }

  /**
   * What the pool publishes in its memo (`PoolGlance`), but for when. `withDigests`: with the
   * digest of the runners that came online and, for a pool beyond one repository, of the
   * repositories it has lately heard from; `withStarted`: with the digest of the runners known
   * to exist (pools whose history predates them write none of these).
   */
  glance(withDigests: boolean, withStarted = false): Omit<PoolGlance, 'at'> {
    return {
      counts: countRunners(this.runners.values()),
      ...countStatuses(this.runners.values()),
      queuedJobs: this.queuedJobCount,
      desired: Math.min(this.demand(), this.settings.maxRunners),
      minIdleRunners: this.settings.minIdleRunners,
      ...(withDigests ? { online: nameSetDigest(this.registeredRunners()) } : {}),
      ...(withStarted ? { started: nameSetDigest(this.startedRunners()) } : {}),
      // Only the sweep's look for lost jobs of an organisation or enterprise reads them.
      ...(withDigests && this.settings.github.scope.kind !== 'repo' ? { repositories: nameSetDigest(this.repositories.carry().map(([name, at]) => `${name}@${at}`)) } : {}),
    };
  }

  view(): PoolView {
    return {
      settings: this.settings,
      settingsVersion: this.settingsVersion,
      runners: [...this.runners.values()].map(({ everReady: _e, seq: _s, failureCounted: _f, leaveAskedAt: _a, leaveReason: _r, started: _t, ...r }) => r),
      queuedJobs: this.queued.list(),
      queuedJobCount: this.queuedJobCount,
      ...(this.queuedJobsDropped > 0 ? { queuedJobsDropped: this.queuedJobsDropped } : {}),
      target: Math.min(this.demand(), this.settings.maxRunners),
      deleting: this.deleting,
    };
  }

  /**
   * What `carry` gives, made to fit in `maxBytes` of JSON. A continue-as-new whose input
   * passes the server's 2 MB payload limit fails every workflow task after it, and the pool
   * would never decide again. The queue's bound leaves room for a pool's runners, but not
   * always for the most a pool may have (5,000 with long names) beside a full queue of jobs
   * from thousands of repositories. The jobs queued last are dropped until it fits, counted
   * in `queuedJobsDropped`; returns how many went.
   */
  carryWithin(maxBytes: number): { carried: PoolCarriedState; dropped: number } {
    let carried = this.carry();
    let size = jsonBytes(carried);
    let dropped = 0;
    while (size > maxBytes && this.queued.size > 0) {
      const perJob = jsonBytes(carried.queue ?? carried.queuedJobs ?? []) / this.queued.size;
      // A tenth more than the estimate, so one or two rounds do it.
      const count = Math.max(1, Math.ceil(((size - maxBytes) / Math.max(perJob, 1)) * 1.1));
      const went = this.queued.dropNewest(count);
      dropped += went;
      this.queuedJobsDropped += went;
      carried = this.carry();
      size = jsonBytes(carried);
    }
    return { carried, dropped };
  }

  /**
   * Everything the next run needs, including what the view leaves out: carried
   * without `everReady`, an ephemeral runner that had finished its job when the
   * pool continued as new counted as a bootstrap failure when it went away, and
   * a busy pool backed off creating runners after every continue-as-new.
   */
  carry(): PoolCarriedState {
    return {
      settingsVersion: this.settingsVersion,
      runners: [...this.runners.values()].map(({ leaveAskedAt: _a, leaveReason: _r, failureCounted, ...r }) => ({ ...r, ...(failureCounted ? { failureCounted } : {}) })),
      // Pools whose history predates the packed form replay carrying the list.
      ...(this.options.packQueue === false ? { queuedJobs: this.queued.list(Number.POSITIVE_INFINITY) } : { queue: this.queued.pack() }),
      ...(this.queuedJobsDropped > 0 ? { queuedJobsDropped: this.queuedJobsDropped } : {}),
      handledJobEvents: [...this.handled],
      goneRunners: [...this.gone],
      runnerSeq: this.runnerSeq,
      deleting: this.deleting,
      consecutiveBootstrapFailures: this.consecutiveBootstrapFailures,
      backoffUntil: this.backoffUntil,
      ...(this.scaleSet ? { scaleSet: this.scaleSet } : {}),
      recentRepositories: this.repositories.carry(),
    };
  }
}
