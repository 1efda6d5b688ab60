/**
 * An in-process GitHub port for lifecycle tests that need GitHub to misbehave on
 * cue (busy, failing N times, hanging). Tests of the real client use the GitHub simulator.
 */
import type { GitHubPort, GitHubRateLimit, GitHubRunner, GitHubScope, PushedRepository, QueuedGitHubJob, QueuedGitHubRun, RemoveRunnerOutcome, RepositoryPage, RunnerCredential, RunnerCredentialRequest } from '../../github/port';
import { GitHubApiError } from '../../github/port';

export interface DoubleFault {
  failTimes?: number;
  hang?: boolean;
  error?: () => Error;
  /** Each call takes this long before it answers (as GitHub under load), for the first `delayTimes` calls. */
  delayMs?: number;
  delayTimes?: number;
}

export class GitHubDouble implements GitHubPort {
  readonly runners = new Map<string, GitHubRunner>();
  readonly calls: { op: string; name?: string; at: number; outcome: string }[] = [];
  /** Names of runners GitHub considers busy: removing them answers 422. */
  readonly busy = new Set<string>();
  /** Runners GitHub calls busy for this many more removals: a job that ends between two asks. */
  readonly busyForRemovals = new Map<string, number>();
  private nextId = 1;
  private faults: Partial<Record<'credential' | 'remove' | 'find', DoubleFault & { seen: number }>> = {};

  setFault(op: 'credential' | 'remove' | 'find', fault: DoubleFault): void {
    this.faults[op] = { ...fault, seen: 0 };
  }

  count(op: string, outcome?: string): number {
    return this.calls.filter((c) => c.op === op && (outcome === undefined || c.outcome === outcome)).length;
  }

  private async injected(op: 'credential' | 'remove' | 'find', name: string): Promise<void> {
    const fault = this.faults[op];
    if (!fault) return;
    fault.seen += 1;
    if (fault.delayMs && fault.seen <= (fault.delayTimes ?? Infinity)) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
    if (fault.hang) {
      this.calls.push({ op, name, at: Date.now(), outcome: 'hang' });
      await new Promise(() => undefined);
    }
    if (fault.failTimes !== undefined && fault.seen <= fault.failTimes) {
      this.calls.push({ op, name, at: Date.now(), outcome: 'fault' });
      throw fault.error?.() ?? new GitHubApiError(`injected ${op} failure`, 502, true);
    }
  }

  async createRunnerCredential(req: RunnerCredentialRequest): Promise<RunnerCredential> {
    await this.injected('credential', req.name);
    const id = this.nextId++;
    this.runners.set(req.name, { id, name: req.name, os: 'linux', status: 'offline', busy: false, labels: req.labels });
    this.calls.push({ op: 'credential', name: req.name, at: Date.now(), outcome: req.jit ? 'jit' : 'registration-token' });
    return req.jit
      ? { kind: 'jit', runnerId: id, encodedJitConfig: Buffer.from(`jit-secret-for-${req.name}`).toString('base64') }
      : { kind: 'registration-token', token: `REGTOKEN-${req.name}`, expiresAt: new Date(Date.now() + 3_600_000).toISOString() };
  }

  async removeRunner(req: { name: string; runnerId?: number }): Promise<RemoveRunnerOutcome> {
    await this.injected('remove', req.name);
    let outcome: RemoveRunnerOutcome;
    const busyLeft = this.busyForRemovals.get(req.name) ?? 0;
    if (busyLeft > 0) this.busyForRemovals.set(req.name, busyLeft - 1);
    if (this.busy.has(req.name) || busyLeft > 0) outcome = 'busy';
    else if (this.runners.delete(req.name)) outcome = 'removed';
    else outcome = 'not_found';
    this.calls.push({ op: 'remove', name: req.name, at: Date.now(), outcome });
    return outcome;
  }

  async findRunnerByName(_scope: unknown, name: string): Promise<GitHubRunner | undefined> {
    await this.injected('find', name);
    const runner = this.runners.get(name);
    const found = runner && { ...runner, busy: runner.busy || this.busy.has(name) };
    this.calls.push({ op: 'find', name, at: Date.now(), outcome: found ? (found.busy ? 'busy' : 'idle') : 'missing' });
    return found;
  }

  async listRunners(): Promise<GitHubRunner[]> {
    this.calls.push({ op: 'list', at: Date.now(), outcome: 'ok' });
    return [...this.runners.values()].map((r) => ({ ...r, busy: r.busy || this.busy.has(r.name) }));
  }

  async listQueuedRuns(_scope: Extract<GitHubScope, { kind: 'repo' }>): Promise<QueuedGitHubRun[]> {
    return [];
  }

  async listRecentlyPushedRepositories(_scope: Extract<GitHubScope, { kind: 'org' }>, _count: number): Promise<PushedRepository[]> {
    return [];
  }

  async listOrgRepositoriesPage(_scope: Extract<GitHubScope, { kind: 'org' }>, _perPage: number, _page: number): Promise<RepositoryPage> {
    return { repositories: [], last: true };
  }

  async listQueuedJobsOfRun(_scope: Extract<GitHubScope, { kind: 'repo' }>, _runId: number): Promise<QueuedGitHubJob[]> {
    return [];
  }

  async getJobStatus() {
    return undefined;
  }

  async listRunnerDownloads() {
    this.calls.push({ op: 'downloads', at: Date.now(), outcome: 'ok' });
    return [{ os: 'linux', architecture: 'x64', download_url: 'https://example.invalid/runner.tar.gz', filename: 'runner.tar.gz' }];
  }

  /** What `rateLimit` answers; an Error is thrown instead (credentials GitHub refuses, GitHub out of reach). */
  rateLimitAnswer: GitHubRateLimit | Error = { limit: 5_000, remaining: 5_000, resetAt: new Date(Date.now() + 3_600_000).toISOString() };

  async rateLimit(): Promise<GitHubRateLimit> {
    this.calls.push({ op: 'rate_limit', at: Date.now(), outcome: this.rateLimitAnswer instanceof Error ? 'error' : 'ok' });
    if (this.rateLimitAnswer instanceof Error) throw this.rateLimitAnswer;
    return this.rateLimitAnswer;
  }
}
