/**
 * What the simulated GitHub knows: registered runners and workflow jobs.
 * Pure bookkeeping; HTTP, webhooks and agents sit on top of it.
 */
import { randomBytes } from 'node:crypto';
import { scopeKey, type GitHubScope } from '../port';

export interface SimRunner {
  id: number;
  name: string;
  scope: GitHubScope;
  labels: string[];
  runnerGroupId: number;
  ephemeral: boolean;
  status: 'online' | 'offline';
  busy: boolean;
  os: string;
  /** Secret inside the runner's JIT config; absent for runners made otherwise. */
  jitSecret?: string;
  jobId?: number;
  /** Set for runners made by a scale set's generatejitconfig: they take only jobs assigned to it. */
  scaleSetId?: number;
}

export type JobConclusion = 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'neutral';

export interface SimJob {
  id: number;
  runId: number;
  /** owner/repo */
  repository: string;
  labels: string[];
  name: string;
  workflowName: string;
  event: RunEvent;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: JobConclusion | null;
  /** What the job will conclude with once it ran. */
  plannedConclusion: JobConclusion;
  durationMs: number;
  runnerId?: number;
  runnerName?: string;
  runnerGroupId?: number;
  createdAt: string;
  /** Its runner's machine died mid-job: only GitHub giving up on it ends it now. */
  lost?: boolean;
  startedAt?: string;
  completedAt?: string;
  /** The scale set the job targets (`runs-on: <scale set name>`), and whether a listener acquired it. */
  scaleSetId?: number;
  acquired?: boolean;
  acquiredAt?: string;
  /**
   * The job's runner request id in its scale set's messages (`runnerRequestId`): another number
   * than the job id its webhooks and the REST API use, as at GitHub.
   */
  requestId?: number;
}

export interface QueueJobInput {
  /** owner/repo; `octo-org/octo-repo` when absent. */
  repository?: string;
  labels: string[];
  durationMs?: number;
  conclusion?: JobConclusion;
  name?: string;
  workflowName?: string;
  /** What started its run (`push` when absent): a run of a schedule or a dispatch is no push to its repository. */
  event?: RunEvent;
}

export type RunEvent = 'push' | 'schedule' | 'workflow_dispatch';

/** Labels GitHub adds itself and marks read-only. */
const READ_ONLY_LABELS = new Set(['self-hosted', 'linux', 'windows', 'macos', 'x64', 'arm', 'arm64']);

export class SimState {
  readonly runners = new Map<number, SimRunner>();
  readonly jobs = new Map<number, SimJob>();
  private nextRunnerId = 1;
  private nextJobId = 9_000_000_001;
  private readonly labelIds = new Map<string, number>();

  addRunner(input: Omit<SimRunner, 'id' | 'status' | 'busy' | 'os'>): SimRunner {
    const runner: SimRunner = { ...input, id: this.nextRunnerId++, status: 'offline', busy: false, os: 'unknown' };
    this.runners.set(runner.id, runner);
    return runner;
  }

  runnersIn(scope: GitHubScope): SimRunner[] {
    const key = scopeKey(scope).toLowerCase();
    return [...this.runners.values()].filter((r) => scopeKey(r.scope).toLowerCase() === key);
  }

  runnerIn(scope: GitHubScope, id: number): SimRunner | undefined {
    const runner = this.runners.get(id);
    return runner && scopeKey(runner.scope).toLowerCase() === scopeKey(scope).toLowerCase() ? runner : undefined;
  }

  /** GitHub runner names are unique per scope, compared without case. */
  runnerNamed(scope: GitHubScope, name: string): SimRunner | undefined {
    return this.runnersIn(scope).find((r) => r.name.toLowerCase() === name.toLowerCase());
  }

  queueJob(input: QueueJobInput, defaultDurationMs: number): SimJob {
    const id = this.nextJobId++;
    const job: SimJob = {
      id,
      runId: 4_000_000_000 + id - 9_000_000_000,
      repository: input.repository ?? 'octo-org/octo-repo',
      labels: input.labels,
      name: input.name ?? 'build',
      workflowName: input.workflowName ?? 'CI',
      event: input.event ?? 'push',
      status: 'queued',
      conclusion: null,
      plannedConclusion: input.conclusion ?? 'success',
      durationMs: input.durationMs ?? defaultDurationMs,
      createdAt: new Date().toISOString(),
    };
    this.jobs.set(id, job);
    return job;
  }

  queuedJobs(): SimJob[] {
    return [...this.jobs.values()].filter((j) => j.status === 'queued');
  }

  /** GitHub's rule: every job label on the runner (case-insensitive, self-hosted implied), and the runner's scope covers the repository. */
  canRun(runner: SimRunner, job: SimJob): boolean {
    // A scale set's runners take only the jobs assigned to it, and such jobs go nowhere else.
    if (runner.scaleSetId !== undefined || job.scaleSetId !== undefined) return runner.scaleSetId === job.scaleSetId && job.acquired === true;
    const have = new Set(runner.labels.map((l) => l.toLowerCase()));
    have.add('self-hosted');
    if (!job.labels.every((l) => have.has(l.toLowerCase()))) return false;
    const [owner = '', repo = ''] = job.repository.toLowerCase().split('/');
    switch (runner.scope.kind) {
      case 'repo':
        return runner.scope.owner.toLowerCase() === owner && runner.scope.repo.toLowerCase() === repo;
      case 'org':
        return runner.scope.org.toLowerCase() === owner;
      case 'enterprise':
        return true;
    }
  }

  /** The runner as GitHub's REST API shows it ("Self hosted runners" schema). */
  runnerJson(runner: SimRunner): Record<string, unknown> {
    return {
      id: runner.id,
      name: runner.name,
      os: runner.os,
      status: runner.status,
      busy: runner.busy,
      ephemeral: runner.ephemeral,
      runner_group_id: runner.runnerGroupId,
      labels: runner.labels.map((name) => ({
        id: this.labelId(name),
        name,
        type: READ_ONLY_LABELS.has(name.toLowerCase()) ? 'read-only' : 'custom',
      })),
    };
  }

  private labelId(name: string): number {
    const key = name.toLowerCase();
    let id = this.labelIds.get(key);
    if (id === undefined) this.labelIds.set(key, (id = this.labelIds.size + 1));
    return id;
  }
}

export const randomToken = (bytes = 20): string => randomBytes(bytes).toString('base64url');

/** GitHub registration tokens: 29 upper-case alphanumerics. */
export const registrationTokenValue = (): string =>
  ('A' + randomBytes(40).toString('base64').replace(/[^A-Za-z0-9]/g, '').toUpperCase()).slice(0, 29);
