/**
 * Message definitions of the runnerInstance workflow, shared by the workflow and
 * every client (API, CLI, scripts, tests). Each signal takes exactly one JSON
 * object so the Temporal Web UI, `temporal workflow signal --input '{...}'` and
 * code send the same thing.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { InstanceStatus, RunnerStatus } from '../domain/instance-status';
import type { HealthFinding } from '../domain/liveness';
import type { GitHubScopeSettings } from '../domain/pool';
import type { InstanceTimings } from '../domain/timings';

export const RUNNER_INSTANCE_WORKFLOW = 'runnerInstance';
export const runnerWorkflowId = (name: string): string => `runner/${name}`;
export const instanceNameFromWorkflowId = (id: string): string | undefined => (id.startsWith('runner/') ? id.slice('runner/'.length) : undefined);

/** What the instance is made from: a snapshot of its pool's settings at creation. */
export interface InstanceSpec {
  github: { credentials: string; scope: GitHubScopeSettings };
  labels: string[];
  image: string;
  flavor: string;
  osType: 'linux' | 'windows';
  osArch: 'amd64' | 'arm64' | 'arm' | 'i386';
  extraSpecs: Record<string, unknown>;
  runnerGroup: string;
  runnerGroupId: number;
  ephemeral: boolean;
  bootstrapTimeoutMs: number;
  /** Set for runners of a scale-set pool: the JIT config comes from the scale set and removal goes through the Actions service. */
  scaleSet?: { id: number; name: string };
}

export interface RunnerInstanceInput {
  name: string;
  pool: string;
  provider: string;
  spec: InstanceSpec;
  timings: InstanceTimings;
  /** Version of the pool settings this instance was made from (pools replace older ones as they leave). */
  poolSettingsVersion?: number;
  /** Report status changes to the pool workflow (set by pools; off for instances started on their own). */
  notifyPool?: boolean;
  /** Continue as new once history passes this many events (default 2,000). */
  historyLimit?: number;
  /** Set only by the instance itself when it continues as new: where the previous run left off. */
  resume?: InstanceResume;
}

/** Everything a running instance needs to carry into its next run, so identity and state survive continue-as-new. */
export interface InstanceResume {
  state: InstanceState;
  jobFinished: boolean;
  completedJobs: number[];
  /** Sealed, as in the create activity's result: never the plain JIT config. */
  sealedJitConfig?: string;
  reportSeq: number;
  reportedPhase: string;
  /** A delete asked for while the run was finishing: the next run must not lose it. */
  deleteRequest?: { reason: string };
}

export interface ReasonArgs {
  reason?: string;
}
export interface JobStartedArgs {
  jobId: number;
  runId?: number;
  /** GitHub's created_at and started_at of the job (ISO), when the event carried them: its queue time. */
  queuedAt?: string;
  startedAt?: string;
}
export interface JobCompletedArgs {
  jobId: number;
  conclusion?: string;
}
/** From the liveness reconciler: what it saw wrong with this instance's machine or runner. */
export interface HealthReportArgs {
  finding: HealthFinding;
  detail?: string;
}
export interface RunnerStatusArgs {
  status: 'installing' | 'idle' | 'failed';
  message?: string;
}

export const forceDeleteSignal = defineSignal<[ReasonArgs]>('forceDelete');
export const deleteSignal = defineSignal<[ReasonArgs]>('delete');
export const jobStartedSignal = defineSignal<[JobStartedArgs]>('jobStarted');
export const jobCompletedSignal = defineSignal<[JobCompletedArgs]>('jobCompleted');
export const runnerStatusSignal = defineSignal<[RunnerStatusArgs]>('runnerStatus');
export const healthReportSignal = defineSignal<[HealthReportArgs]>('healthReport');
export const reportPhaseSignal = defineSignal<[ReasonArgs]>('reportPhase');

/** Shown in the Temporal Web UI next to each signal and query. */
export const INSTANCE_MESSAGE_DESCRIPTIONS = {
  forceDelete: 'Delete now: the workflow ends at once; a machine the provider does not confirm gone within forceDeleteAttemptTimeout (50 ms by default) is retried by workflow cleanup/<name> until it is. Input: {"reason": "..."}',
  delete: 'Graceful delete: unregister from GitHub unless busy, then delete from the provider with backoff until it succeeds. Input: {"reason": "..."}',
  jobStarted: 'A job started on this runner (from the workflow_job in_progress webhook). Input: {"jobId": 123, "runId": 456}',
  jobCompleted: 'The job on this runner finished (workflow_job completed webhook); an ephemeral runner then leaves. Input: {"jobId": 123, "conclusion": "success"}',
  runnerStatus: 'Status reported by the instance itself. Input: {"status": "installing" | "idle" | "failed", "message": "..."}',
  healthReport:
    'A liveness check found the machine or runner dead. An idle runner leaves now (pending_delete, reason "machine gone" etc.); a busy one after a grace period, if a second look agrees. Input: {"finding": "machine_gone" | "machine_stopped" | "machine_error" | "runner_offline" | "runner_missing", "detail": "..."}',
  reportPhase:
    "Tell the pool again whether this runner is starting, idle, busy or leaving: sent by the pool's look at its runners when it still counts the runner as starting although its machine runs (a report given up while the server was out of reach). Input: {}",
  state: 'Current status, runner status, ids, job, forced/leaked flags, last error and every status transition.',
  sealedCredential: "The runner's JIT config, sealed with the installation's key: what the metadata service hands the instance.",
} as const;

export interface StatusTransition {
  from: InstanceStatus;
  to: InstanceStatus;
  at: string;
  reason?: string;
}

export interface InstanceState {
  name: string;
  pool: string;
  provider: string;
  status: InstanceStatus;
  runnerStatus: RunnerStatus;
  providerId?: string;
  githubRunnerId?: number;
  jobId?: number;
  forced: boolean;
  leaked: boolean;
  lastError?: string;
  /** A liveness finding the instance is still weighing (busy runner's grace period, second look pending). */
  health?: { finding: HealthFinding; detail?: string; since: string };
  transitions: StatusTransition[];
}

export const stateQuery = defineQuery<InstanceState>('state');
/** The sealed JIT config (undefined for registration-token runners); only the API can open it. */
export const sealedCredentialQuery = defineQuery<string | undefined>('sealedCredential');
