/**
 * Message definitions of the runnerPool workflow, shared by the workflow and its clients.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { InstanceStatus, RunnerStatus } from '../domain/instance-status';
import type { PoolCounts } from '../domain/pool-counts';
import type { NameSetDigest } from '../domain/name-set-digest';
import type { GitHubScopeSettings, PoolSettings } from '../domain/pool';
import type { InstanceTimings } from '../domain/timings';
import type { PackedQueue } from './queued-jobs';
import type { RecentRepository } from './recent-repositories';

export const RUNNER_POOL_WORKFLOW = 'runnerPool';
export const poolWorkflowId = (name: string): string => `pool/${name}`;
/** The pool a workflow id names, or undefined for another workflow's. */
export const poolNameOf = (workflowId: string): string | undefined => (workflowId.startsWith('pool/') ? workflowId.slice('pool/'.length) : undefined);

export interface QueuedJob {
  jobId: number;
  runId?: number;
  labels: string[];
  /** owner/repo the job belongs to, for operators. */
  repository?: string;
  /** When GitHub queued it, as `Date.parse` reads it (see `isReadableTime`). */
  queuedAt?: string;
}

/** A queued job's time the pool can count its wait from: a job whose `queuedAt` fails this is dropped by the pool. */
export const isReadableTime = (value: unknown): value is string => typeof value === 'string' && Number.isFinite(Date.parse(value));

export interface RunnerPoolInput {
  settings: PoolSettings;
  timings: InstanceTimings;
  /** State carried across continue-as-new; absent on a new pool. */
  carried?: PoolCarriedState;
  /** History events before the pool continues as new (tests set it low). */
  historyLimit?: number;
  /** Runners started per pool decision at most (tests set it low); the rest follow in the next ones. */
  maxStartsPerDecision?: number;
}

export interface PoolRunnerView {
  name: string;
  status: InstanceStatus;
  runnerStatus: RunnerStatus;
  jobId?: number;
  settingsVersion: number;
  since: string;
  /** The pool asked this runner to leave. */
  deleteRequested?: boolean;
}

/** What a pool remembers of a runner across continue-as-new beyond what it shows. */
export interface PoolCarriedRunner extends PoolRunnerView {
  /** It came online at some point: its exit is not a bootstrap failure. */
  everReady?: boolean;
  /** Its failure to bootstrap was counted already. */
  failureCounted?: boolean;
  /** Sequence number of its newest report applied, so an older one arriving late is still dropped. */
  seq?: number;
  /** Its workflow was started (the start batch returned), whether or not it has reported since. */
  started?: boolean;
}

export interface PoolCarriedState {
  settingsVersion: number;
  runners: PoolCarriedRunner[];
  /** Queued jobs as runs before the packed form carried them. */
  queuedJobs?: QueuedJob[];
  /** Queued jobs, packed (workflows/queued-jobs.ts). */
  queue?: PackedQueue;
  /** Queued jobs not kept because the pool held as many as it keeps. */
  queuedJobsDropped?: number;
  /** `${jobId}:${action}` keys of job events already handled, newest last (bounded). */
  handledJobEvents: string[];
  /** Runners known to be gone, newest last (bounded): a late report from one must not bring it back. */
  goneRunners?: string[];
  runnerSeq: number;
  deleting: boolean;
  consecutiveBootstrapFailures: number;
  /** Epoch ms before which no runner is created (bootstrap-failure backoff). */
  backoffUntil?: number;
  /** Scale-set pools: the scale set and its assigned jobs as the listener last reported. */
  scaleSet?: { id: number; name: string; totalAssignedJobs: number; seq: number; listener?: string };
  /** Epoch ms of the next look for runners whose workflow ended unreported, so continuing as new does not put it off. */
  auditDueAt?: number;
  /** Repositories lately queued from, least lately first (workflows/recent-repositories.ts). */
  recentRepositories?: RecentRepository[];
}

export interface PoolView {
  settings: PoolSettings;
  settingsVersion: number;
  runners: PoolRunnerView[];
  /** The oldest queued jobs (at most a few hundred; `queuedJobCount` counts them all). */
  queuedJobs: QueuedJob[];
  /** Absent from pools run by older workers, whose `queuedJobs` lists every job. */
  queuedJobCount?: number;
  /** Queued jobs not kept because the pool held as many as it keeps (workflows/queued-jobs.ts). */
  queuedJobsDropped?: number;
  target: number;
  deleting: boolean;
}

/** How many jobs a pool counts as queued (older workers' views list them all instead of counting). */
export function queuedJobCount(view: Pick<PoolView, 'queuedJobs' | 'queuedJobCount'>): number {
  return view.queuedJobCount ?? view.queuedJobs.length;
}

export interface UpdatePoolArgs {
  settings: PoolSettings;
}
export interface JobProgressArgs {
  jobId: number;
  action: 'in_progress' | 'completed';
  runnerName?: string;
  /** `owner/name` of the job's repository, when the sender knows it (a scale set's listener does). */
  repository?: string;
}
export interface RunnerChangedArgs {
  name: string;
  /** Increases with every report of one instance: signals may arrive out of order, stale ones are dropped. */
  seq: number;
  status: InstanceStatus;
  runnerStatus: RunnerStatus;
  jobId?: number;
}

export const updatePoolSignal = defineSignal<[UpdatePoolArgs]>('updatePool');
export const deletePoolSignal = defineSignal<[{ reason?: string }]>('deletePool');
export const jobQueuedSignal = defineSignal<[QueuedJob]>('jobQueued');
/** What the webhook intake sends: the jobs queued for this pool since its previous signal, as one history event. */
export interface JobsQueuedArgs {
  jobs: QueuedJob[];
}
export const jobsQueuedSignal = defineSignal<[JobsQueuedArgs]>('jobsQueued');
export const jobProgressSignal = defineSignal<[JobProgressArgs]>('jobProgress');
export const runnerChangedSignal = defineSignal<[RunnerChangedArgs]>('runnerChanged');
/** What instances send: the reports of many runners, batched per pool by the worker (activities/pool-activities.ts). */
export interface RunnersChangedArgs {
  reports: RunnerChangedArgs[];
}
export const runnersChangedSignal = defineSignal<[RunnersChangedArgs]>('runnersChanged');
export interface AuditPoolArgs {
  /** Why the pool is asked, for its log. */
  reason?: string;
}
/**
 * Look now for runners whose workflow ended unreported, runners whose report of coming up was
 * lost, and a scale set's listener that no longer runs, rather than at the next
 * `poolAuditInterval`. The liveness pass sends it to a pool whose glance keeps disagreeing with
 * the runners it lists; the pool checks for itself, so a signal sent for nothing costs one look.
 */
export const auditPoolSignal = defineSignal<[AuditPoolArgs]>('auditPool');
export const poolStateQuery = defineQuery<PoolView>('poolState');
export interface KnownJobsArgs {
  jobIds: number[];
}
/** Which of the given jobs the pool counts as queued or has a runner on (its view lists only the oldest queued). */
export const knownJobsQuery = defineQuery<number[], [KnownJobsArgs]>('knownJobs');
/** The repositories the pool has lately had jobs queued from, most lately first: `[owner/name, epoch ms]`. */
export const recentRepositoriesQuery = defineQuery<RecentRepository[]>('recentRepositories');
/** Names of the runners the pool counts whose workflows are known to exist: started, or heard from. */
export const startedRunnersQuery = defineQuery<string[]>('startedRunners');
/** Names of the runners the pool counts, known to exist, that it has not heard come online or leave: starting, as far as it knows. */
export const unheardRunnersQuery = defineQuery<string[]>('unheardRunners');
/** Names of every runner the pool counts, started or still starting. */
export const countedRunnersQuery = defineQuery<string[]>('countedRunners');
/** Names of the runners the pool counts that have come online (reported idle or busy) at least once. */
export const registeredRunnersQuery = defineQuery<string[]>('registeredRunners');

export const POOL_MESSAGE_DESCRIPTIONS = {
  updatePool: 'Replace the pool settings (validated by the API). Busy runners are left alone; runners from older settings are replaced as they leave. Input: {"settings": {...}}',
  deletePool: 'Drain the pool: stop creating runners, delete idle ones gracefully, wait for busy ones, then end. Input: {"reason": "..."}',
  jobQueued: 'A workflow_job queued for this pool. Input: {"jobId": 1, "labels": ["self-hosted"]}',
  jobsQueued: 'workflow_jobs queued for this pool, batched by the webhook intake. Input: {"jobs": [{"jobId": 1, "labels": ["self-hosted"]}]}',
  jobProgress: 'A job left the queue (in_progress) or finished (completed). Input: {"jobId": 1, "action": "in_progress"}',
  runnerChanged: 'A runner instance of this pool changed status.',
  runnersChanged: 'Runner instances of this pool changed status (sent by the instance workflows, batched). Input: {"reports": [...]}',
  auditPool: 'Look now for runners whose workflow ended without telling the pool, runners whose report of coming up was lost, and a scale set\'s listener that no longer runs; at most once per leaveReaskInterval. Input: {"reason": "..."}',
  poolState: 'Settings, runners with their statuses, the oldest queued jobs with their count, and the current target size.',
  knownJobs: 'Which of the given job ids the pool counts as queued or has a runner on. Input: {"jobIds": [1, 2]}',
  recentRepositories: 'The repositories the pool has lately had jobs from (at most 100; queued, or for a scale set started), most lately first, each as [owner/name, epoch ms]: where the sweep looks for jobs of an organisation pool whose queued webhook was lost, and whose organisations\' webhooks an enterprise pool\'s failed deliveries are asked for again through.',
  startedRunners: 'Names of the runners the pool counts whose workflows are known to exist (started, or heard from).',
  unheardRunners: 'Names of the runners the pool counts as starting: known to exist, not yet heard come online or leave.',
  countedRunners: 'Names of every runner the pool counts, started or still starting.',
  registeredRunners: 'Names of the runners the pool counts that have come online (reported idle or busy) at least once.',
  unmatchedJob: 'Record a job no pool could take.',
  jobsUnmatched: 'Record jobs no pool could take, batched by the webhook intake. Input: {"jobs": [{"jobId": 1, "labels": ["gpu"], "reason": "..."}]}',
  unmatchedJobs: 'The most recent jobs no pool could take, with the reason.',
} as const;

/**
 * Jobs no pool could take are kept (bounded) by one `unmatchedJobs` workflow per
 * installation (task queue) so operators can see them: `jobs/unmatched/runnerflow` by default.
 */
export const UNMATCHED_JOBS_WORKFLOW = 'unmatchedJobs';
export const unmatchedJobsWorkflowId = (taskQueue: string): string => `jobs/unmatched/${taskQueue}`;
export interface UnmatchedJob extends QueuedJob {
  reason: string;
  recordedAt?: string;
}
export const unmatchedJobSignal = defineSignal<[UnmatchedJob]>('unmatchedJob');
export interface JobsUnmatchedArgs {
  jobs: UnmatchedJob[];
}
export const jobsUnmatchedSignal = defineSignal<[JobsUnmatchedArgs]>('jobsUnmatched');
export const unmatchedJobsQuery = defineQuery<UnmatchedJob[]>('unmatchedJobs');

/** Memo every runnerPool workflow keeps current, so routing needs one visibility call. */
export interface PoolMemo {
  labels: string[];
  priority: number;
  enabled: boolean;
  maxRunners: number;
  provider: string;
  /** Where the pool's runners are registered: a job of another repository or organisation cannot use them. */
  scope?: GitHubScopeSettings;
  /** Scale-set pools take their jobs from the scale set, not from webhooks. */
  mode?: 'webhook' | 'scaleSet';
  /**
   * The name of the GitHub credentials the pool registers runners with (a configuration key, not
   * a secret), and the prefix of its runners' names when it has one: the sweep and the redelivery
   * pass read them here instead of asking each pool. Absent from memos written before.
   */
  credentials?: string;
  runnerPrefix?: string;
  /** Scale-set pools: what names their scale set at GitHub besides scope and labels; all but the runner group fixed for the pool's life. */
  scaleSet?: { name: string; runnerGroup: string; credentials: string };
  /** Being deleted: it takes no more jobs, though visibility lists it until its last runner is gone. */
  deleting?: true;
  /** Absent until the pool's first decision, and from pools run by workers that did not write it. */
  glance?: PoolGlance;
}

/** What the Web UI shows for the timer that writes a pool's glance once its interval is over. */
export const GLANCE_TIMER_SUMMARY = 'write the pool glance held back by poolGlanceInterval';

/**
 * A pool at a glance, written into its memo by a decision that changed it, at most every
 * `poolGlanceInterval`. The dashboard's summary and the metrics' gauges read every pool's from
 * one visibility listing instead of asking each pool a query: with hundreds of pools those
 * queries kept the worker busy replaying pools it did not hold in its cache, and a query that
 * reaches a pool no worker holds while signals wait is how a pool's history stops replaying
 * (docs/self-healing.md).
 */
export interface PoolGlance {
  counts: PoolCounts;
  /** Runners by instance status. */
  statuses: Partial<Record<InstanceStatus, number>>;
  /** Runners by what their agent reported. */
  agents: Partial<Record<RunnerStatus, number>>;
  queuedJobs: number;
  /** Runners the pool wants right now (min idle + queued jobs, capped at max). */
  desired: number;
  minIdleRunners: number;
  /**
   * The runners the pool counts that have come online, as a digest of their names: a liveness
   * pass whose listing of the pool's runners has the same digest need not ask the pool which
   * runners it counts and which came online (domain/name-set-digest.ts). Absent from pools
   * that wrote their glance before it was added.
   */
  online?: NameSetDigest;
  /**
   * The runners the pool counts whose workflows are known to exist, as a digest of their names:
   * a liveness pass whose listing of the pool's open runners has another digest, pass after
   * pass, asks the pool to look for runners that ended without telling it (`auditPool`).
   * Absent from pools that wrote their glance before it was added.
   */
  started?: NameSetDigest;
  /**
   * An organisation or enterprise pool's recent repositories (each with when it last queued a
   * job), as a digest: the sweep asks the pool for the list again only when it has changed.
   */
  repositories?: NameSetDigest;
  /** When the decision that wrote it was made (epoch ms, the workflow's clock). */
  at: number;
}
