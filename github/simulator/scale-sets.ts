/**
 * The Actions service's side of runner scale sets, as bookkeeping: runner
 * groups, scale sets, message sessions (one per scale set), each scale set's
 * message queue with its statistics, and job acquisition. HTTP sits on top in
 * actions-service.ts; agents.ts reports job starts and completions here.
 */
import { randomUUID } from 'node:crypto';
import type {
  AcquirableJob,
  JobMessage,
  RunnerScaleSet,
  RunnerScaleSetStatistic,
} from '../actions/types';
import { scopeKey, type GitHubScope } from '../port';
import type { SimJob, SimRunner, SimState } from './sim-state';

export interface SimScaleSet {
  id: number;
  name: string;
  scope: GitHubScope;
  runnerGroupId: number;
  runnerGroupName: string;
  labels: string[];
  createdOn: string;
}

export interface SimSession {
  sessionId: string;
  scaleSetId: number;
  ownerName: string;
  token: string;
  lastPollAt: number;
}

interface QueuedMessage {
  messageId: number;
  /** Set on a message that is not job messages (a fault): its type, and no jobs. */
  foreignType?: string;
  jobs: JobMessage[];
  deleted: boolean;
  deliveries: number;
}

export interface ScaleSetView extends SimScaleSet {
  session?: { sessionId: string; ownerName: string; lastPollAt: string };
  statistics: RunnerScaleSetStatistic;
  messages: { pending: number; deleted: number; redelivered: number };
}

/**
 * How the service hands a scale set its jobs: offered (`JobAvailable`) for its listener to
 * acquire, or assigned by GitHub's newer broker with no acquire (`JobAssigned` only).
 */
export type ScaleSetAssignment = 'acquire' | 'broker';

export interface ScaleSetTimings {
  /** A session nobody polled for this long no longer blocks a new one. */
  sessionIdleTimeoutMs: number;
}

const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
/** JWT-shaped tokens with an `exp`, as the real service's are (clients read `exp` to renew early). */
export const simJwt = (ttlMs: number, claims: Record<string, unknown> = {}): string =>
  `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url({ ...claims, exp: Math.floor((Date.now() + ttlMs) / 1000), jti: randomUUID() })}.${randomUUID().replace(/-/g, '')}`;

export class SimScaleSets {
  readonly groups = new Map<number, { id: number; name: string; isDefaultGroup: boolean }>([[1, { id: 1, name: 'Default', isDefaultGroup: true }]]);
  readonly scaleSets = new Map<number, SimScaleSet>();
  private readonly sessions = new Map<number, SimSession>();
  private readonly queues = new Map<number, QueuedMessage[]>();
  private readonly waiters = new Map<number, Set<() => void>>();
  private nextScaleSetId = 1;
  private nextMessageId = 1;
  /** Far from the job ids, so that a request id taken for a job id (or the reverse) finds nothing. */
  private nextRequestId = 900_000_001;
  private readonly jobOfRequest = new Map<number, number>();
  private redelivered = 0;
  private assignment: ScaleSetAssignment = 'acquire';

  constructor(
    private readonly state: SimState,
    private readonly timings: ScaleSetTimings,
    /** Hand acquired jobs to idle agents. */
    private readonly dispatch: () => void,
    private readonly serverUrl: () => string,
    /** True when the offer of a job is to be lost (a fault). */
    private readonly loseOffer: () => boolean = () => false,
  ) {}

  groupNamed(name: string): { id: number; name: string; isDefaultGroup: boolean } | undefined {
    return [...this.groups.values()].find((g) => g.name.toLowerCase() === name.toLowerCase());
  }

  addGroup(name: string): number {
    const existing = this.groupNamed(name);
    if (existing) return existing.id;
    const id = this.groups.size + 1;
    this.groups.set(id, { id, name, isDefaultGroup: false });
    return id;
  }

  find(scope: GitHubScope, runnerGroupId: number, name: string): SimScaleSet | undefined {
    const key = scopeKey(scope).toLowerCase();
    return [...this.scaleSets.values()].find(
      (s) => scopeKey(s.scope).toLowerCase() === key && s.runnerGroupId === runnerGroupId && s.name.toLowerCase() === name.toLowerCase(),
    );
  }

  create(scope: GitHubScope, runnerGroupId: number, name: string, labels: string[]): SimScaleSet {
    const group = this.groups.get(runnerGroupId);
    const set: SimScaleSet = {
      id: this.nextScaleSetId++,
      name,
      scope,
      runnerGroupId,
      runnerGroupName: group?.name ?? 'Default',
      labels,
      createdOn: new Date().toISOString(),
    };
    this.scaleSets.set(set.id, set);
    this.queues.set(set.id, []);
    // Jobs queued for this name before the scale set existed become available to it now.
    for (const job of this.state.queuedJobs()) this.offer(job);
    return set;
  }

  /**
   * A PATCH: the scale set keeps its id, session, queue and runners. `runs-on` reaches a scale set
   * by its name, which is among the labels it was made with: a new name takes the old one's place
   * there, and jobs already queued for the new name become available to it.
   */
  update(set: SimScaleSet, runnerGroupId: number, name: string): SimScaleSet {
    set.runnerGroupId = runnerGroupId;
    set.runnerGroupName = this.groups.get(runnerGroupId)?.name ?? set.runnerGroupName;
    if (name !== set.name) {
      const old = set.name.toLowerCase();
      set.labels = set.labels.map((label) => (label.toLowerCase() === old ? name : label));
      set.name = name;
      for (const job of this.state.queuedJobs()) this.offer(job);
    }
    return set;
  }

  /** Deleting a scale set ends its session and unregisters its runners. */
  delete(id: number, runnerRemoved: (runnerId: number) => void): boolean {
    if (!this.scaleSets.delete(id)) return false;
    this.sessions.delete(id);
    this.queues.delete(id);
    for (const runner of [...this.state.runners.values()]) {
      if (runner.scaleSetId === id) {
        this.state.runners.delete(runner.id);
        runnerRemoved(runner.id);
      }
    }
    this.wake(id);
    return true;
  }

  json(set: SimScaleSet): RunnerScaleSet {
    return {
      id: set.id,
      name: set.name,
      runnerGroupId: set.runnerGroupId,
      runnerGroupName: set.runnerGroupName,
      labels: set.labels.map((name) => ({ type: 'System', name })),
      RunnerSetting: { ephemeral: true, isElastic: true, disableUpdate: true },
      createdOn: set.createdOn,
      runnerJitConfigUrl: `${this.serverUrl()}/_actions/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`,
      statistics: this.statistics(set.id),
    };
  }

  // ---- sessions

  activeSession(scaleSetId: number): SimSession | undefined {
    return this.sessions.get(scaleSetId);
  }

  /** A new session, or 'conflict' while another one is alive (polled within the idle timeout). */
  openSession(scaleSetId: number, ownerName: string, tokenTtlMs: number): SimSession | 'conflict' {
    const current = this.sessions.get(scaleSetId);
    if (current && Date.now() - current.lastPollAt < this.timings.sessionIdleTimeoutMs) return 'conflict';
    const session: SimSession = { sessionId: randomUUID(), scaleSetId, ownerName, token: simJwt(tokenTtlMs, { sid: scaleSetId }), lastPollAt: Date.now() };
    this.sessions.set(scaleSetId, session);
    return session;
  }

  session(scaleSetId: number, sessionId: string): SimSession | undefined {
    const s = this.sessions.get(scaleSetId);
    return s && s.sessionId === sessionId ? s : undefined;
  }

  sessionByToken(token: string): SimSession | undefined {
    return [...this.sessions.values()].find((s) => s.token === token);
  }

  refreshSession(session: SimSession, tokenTtlMs: number): void {
    session.token = simJwt(tokenTtlMs, { sid: session.scaleSetId });
    session.lastPollAt = Date.now();
  }

  closeSession(scaleSetId: number, sessionId: string): boolean {
    if (!this.session(scaleSetId, sessionId)) return false;
    this.sessions.delete(scaleSetId);
    this.wake(scaleSetId);
    return true;
  }

  /** Fault: the service forgets the scale set's session. */
  loseSession(scaleSetId?: number): void {
    for (const id of scaleSetId === undefined ? [...this.sessions.keys()] : [scaleSetId]) {
      this.sessions.delete(id);
      this.wake(id);
    }
  }

  /** Fault: the session's queue token stops being accepted (it "expired"). */
  expireQueueTokens(): void {
    for (const s of this.sessions.values()) s.token = `${s.token}.expired`;
  }

  // ---- the queue

  /** The oldest message not yet acknowledged after `lastMessageId`. */
  nextMessage(scaleSetId: number, lastMessageId: number): QueuedMessage | undefined {
    return this.queues.get(scaleSetId)?.find((m) => !m.deleted && m.messageId > lastMessageId);
  }

  /** Fault: the newest message already delivered, delivered again (even if acknowledged). */
  redeliver(scaleSetId: number): QueuedMessage | undefined {
    const delivered = (this.queues.get(scaleSetId) ?? []).filter((m) => m.deliveries > 0);
    const again = delivered[delivered.length - 1];
    if (again) this.redelivered += 1;
    return again;
  }

  /** Fault: a message of another type than job messages joins the queue. */
  pushForeign(scaleSetId: number, messageType: string): void {
    const queue = this.queues.get(scaleSetId);
    if (!queue) return;
    queue.push({ messageId: this.nextMessageId++, foreignType: messageType, jobs: [], deleted: false, deliveries: 0 });
    this.wake(scaleSetId);
  }

  delivered(message: QueuedMessage): void {
    message.deliveries += 1;
  }

  deleteMessage(scaleSetId: number, messageId: number): boolean {
    const message = this.queues.get(scaleSetId)?.find((m) => m.messageId === messageId);
    if (!message || message.deleted) return false;
    message.deleted = true;
    return true;
  }

  /** Resolves when a message may have arrived for the scale set, or after `ms`. */
  waitForMessage(scaleSetId: number, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(scaleSetId) ?? new Set();
      this.waiters.set(scaleSetId, set);
      const done = (): void => {
        clearTimeout(timer);
        set.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
      signal.addEventListener('abort', done);
    });
  }

  private wake(scaleSetId: number): void {
    for (const w of [...(this.waiters.get(scaleSetId) ?? [])]) w();
  }

  /** Job events join the newest message not yet delivered: GitHub batches them the same way (`body` is an array). */
  private push(scaleSetId: number, job: JobMessage): void {
    const queue = this.queues.get(scaleSetId);
    if (!queue) return;
    const open = queue[queue.length - 1];
    if (open && !open.deleted && open.deliveries === 0 && open.foreignType === undefined) open.jobs.push(job);
    else queue.push({ messageId: this.nextMessageId++, jobs: [job], deleted: false, deliveries: 0 });
    this.wake(scaleSetId);
  }

  // ---- jobs

  /** A queued job whose `runs-on` labels are all the scale set's (its name is one of them, as its creator chose) becomes available to it. */
  offer(job: SimJob): void {
    if (job.scaleSetId !== undefined || job.status !== 'queued') return;
    const set = [...this.scaleSets.values()].find((s) => this.targets(s, job));
    if (!set) return;
    job.scaleSetId = set.id;
    if (job.requestId === undefined) {
      job.requestId = this.nextRequestId++;
      this.jobOfRequest.set(job.requestId, job.id);
    }
    if (this.assignment === 'broker') {
      // Assigned at once; a message that is lost leaves the statistics of later ones to count it.
      this.assign(job);
      if (!this.loseOffer()) this.push(set.id, this.base(job, 'JobAssigned'));
      this.dispatch();
      return;
    }
    if (this.loseOffer()) return;
    this.push(set.id, { ...this.base(job, 'JobAvailable'), acquireJobUrl: `${this.serverUrl()}/_actions/_apis/runtime/runnerscalesets/${set.id}/acquirejobs` });
  }

  setAssignment(mode: ScaleSetAssignment): void {
    this.assignment = mode;
  }

  private assign(job: SimJob): void {
    job.acquired = true;
    job.acquiredAt = new Date().toISOString();
  }

  private targets(set: SimScaleSet, job: SimJob): boolean {
    const wanted = job.labels.map((l) => l.toLowerCase()).filter((l) => l !== 'self-hosted');
    if (wanted.length === 0) return false;
    const [owner = '', repo = ''] = job.repository.toLowerCase().split('/');
    const inScope =
      set.scope.kind === 'enterprise' ||
      (set.scope.kind === 'org' && set.scope.org.toLowerCase() === owner) ||
      (set.scope.kind === 'repo' && set.scope.owner.toLowerCase() === owner && set.scope.repo.toLowerCase() === repo);
    if (!inScope) return false;
    const have = new Set(set.labels.map((l) => l.toLowerCase()));
    return wanted.every((l) => have.has(l));
  }

  /** The scale set's jobs no listener has acquired, as the service lists them. */
  acquirable(scaleSetId: number): AcquirableJob[] {
    const set = this.scaleSets.get(scaleSetId);
    if (!set) return [];
    return [...this.state.jobs.values()]
      .filter((job) => job.scaleSetId === scaleSetId && job.status === 'queued' && !job.acquired)
      .map((job) => {
        const base = this.base(job, 'JobAvailable');
        return {
          acquireJobUrl: `${this.serverUrl()}/_actions/_apis/runtime/runnerscalesets/${set.id}/acquirejobs`,
          messageType: base.messageType,
          runnerRequestId: base.runnerRequestId,
          repositoryName: base.repositoryName,
          ownerName: base.ownerName,
          jobWorkflowRef: base.jobWorkflowRef,
          eventName: base.eventName,
          requestLabels: base.requestLabels,
        };
      });
  }

  /** Ids won: available jobs of this scale set not acquired before. */
  acquire(scaleSetId: number, requestIds: number[]): number[] {
    const won: number[] = [];
    for (const id of requestIds) {
      const jobId = this.jobOfRequest.get(id);
      const job = jobId === undefined ? undefined : this.state.jobs.get(jobId);
      if (!job || job.scaleSetId !== scaleSetId || job.acquired || job.status !== 'queued') continue;
      this.assign(job);
      won.push(id);
      this.push(scaleSetId, this.base(job, 'JobAssigned'));
    }
    if (won.length > 0) this.dispatch();
    return won;
  }

  jobStarted(job: SimJob, runner: SimRunner): void {
    if (job.scaleSetId === undefined) return;
    this.push(job.scaleSetId, { ...this.base(job, 'JobStarted'), runnerId: runner.id, runnerName: runner.name });
  }

  jobCompleted(job: SimJob, runner: SimRunner | undefined, result: string): void {
    if (job.scaleSetId === undefined) return;
    this.push(job.scaleSetId, { ...this.base(job, 'JobCompleted'), result, runnerId: runner?.id ?? 0, runnerName: runner?.name ?? '' });
  }

  statistics(scaleSetId: number): RunnerScaleSetStatistic {
    const jobs = [...this.state.jobs.values()].filter((j) => j.scaleSetId === scaleSetId && j.status !== 'completed');
    const runners = [...this.state.runners.values()].filter((r) => r.scaleSetId === scaleSetId);
    const online = runners.filter((r) => r.status === 'online');
    return {
      totalAvailableJobs: jobs.filter((j) => j.status === 'queued' && !j.acquired).length,
      totalAcquiredJobs: jobs.filter((j) => j.status === 'queued' && j.acquired).length,
      totalAssignedJobs: jobs.filter((j) => j.acquired).length,
      totalRunningJobs: jobs.filter((j) => j.status === 'in_progress').length,
      totalRegisteredRunners: runners.length,
      totalBusyRunners: online.filter((r) => r.busy).length,
      totalIdleRunners: online.filter((r) => !r.busy).length,
    };
  }

  view(): ScaleSetView[] {
    return [...this.scaleSets.values()].map((set) => {
      const session = this.sessions.get(set.id);
      const queue = this.queues.get(set.id) ?? [];
      return {
        ...set,
        ...(session ? { session: { sessionId: session.sessionId, ownerName: session.ownerName, lastPollAt: new Date(session.lastPollAt).toISOString() } } : {}),
        statistics: this.statistics(set.id),
        messages: { pending: queue.filter((m) => !m.deleted).length, deleted: queue.filter((m) => m.deleted).length, redelivered: this.redelivered },
      };
    });
  }

  private base<T extends JobMessage['messageType']>(job: SimJob, messageType: T) {
    const [owner = '', repo = ''] = job.repository.split('/');
    return {
      messageType,
      runnerRequestId: job.requestId ?? job.id,
      repositoryName: repo,
      ownerName: owner,
      jobId: randomUUIDFor(job.id),
      jobWorkflowRef: `${job.repository}/.github/workflows/ci.yml@refs/heads/main`,
      jobDisplayName: job.name,
      workflowRunId: job.runId,
      eventName: 'push',
      requestLabels: job.labels,
      queueTime: job.createdAt,
      scaleSetAssignTime: job.acquired ? new Date().toISOString() : '0001-01-01T00:00:00Z',
      runnerAssignTime: job.startedAt ?? '0001-01-01T00:00:00Z',
      finishTime: job.completedAt ?? '0001-01-01T00:00:00Z',
    } as const;
  }
}

/** A stable UUID-shaped job id per job (GitHub's `jobId` in scale-set messages is a UUID string). */
function randomUUIDFor(id: number): string {
  const hex = id.toString(16).padStart(32, '0').slice(-32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
