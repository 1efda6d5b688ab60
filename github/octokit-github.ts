/**
 * GitHubPort on Octokit, for github.com and GitHub Enterprise Server
 * (`apiUrl` https://host/api/v3). Repo, org and enterprise scopes use the same
 * routes under their own prefix.
 *
 * Octokit's retry and throttling plugins are deliberately absent: a failed call
 * surfaces at once as a typed error and the Temporal activity's retry policy
 * decides when to try again (a rate limit's `retryAfterMs` becomes the next
 * retry delay), so waiting is durable and visible in the workflow history.
 */
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { githubRateLimitRemaining, githubRequests } from '../observability/metrics';
import type { RunnerTool } from '../providers/port';
import { asHttpFailure, header, toPortError } from './github-errors';
import {
  GitHubApiError,
  type GitHubPort,
  type GitHubRateLimit,
  type GitHubRunner,
  type GitHubJobStatus,
  type GitHubScope,
  type QueuedGitHubJob,
  type PushedRepository,
  type RepositoryPage,
  type QueuedGitHubRun,
  type RemoveRunnerOutcome,
  type RunnerCredential,
  type RunnerCredentialRequest,
  type HookScope,
  type ScopeWebhook,
  type ScopeWebhooksPort,
  type WebhookDeliveriesPort,
  type WebhookDelivery,
} from './port';

export type GitHubAuth =
  | { type: 'pat'; token: string }
  | { type: 'app'; appId: number | string; installationId: number; privateKey: string };

export interface GitHubLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface OctokitGitHubOptions {
  /** Name of the configured credentials: the metrics label. */
  credentialsName: string;
  apiUrl: string;
  webUrl?: string;
  auth: GitHubAuth;
  logger?: GitHubLogger;
  /** Upper bound for one HTTP call, so an activity never hangs on a stuck connection. */
  requestTimeoutMs?: number;
  /** Told when GitHub refuses the credentials (401): a rotated secret may be waiting to be read. */
  onUnauthorized?: () => void;
}

interface RawResponse {
  status: number;
  data: unknown;
  headers: Record<string, string | number | undefined>;
}

interface RunnerJson {
  id: number;
  name: string;
  os: string;
  status: string;
  busy: boolean;
  labels: { name: string }[];
}

const silentLogger: GitHubLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined };
const PAGE_SIZE = 100;

function scopeRoute(scope: GitHubScope): { prefix: string; params: Record<string, string> } {
  switch (scope.kind) {
    case 'repo':
      return { prefix: '/repos/{owner}/{repo}', params: { owner: scope.owner, repo: scope.repo } };
    case 'org':
      return { prefix: '/orgs/{org}', params: { org: scope.org } };
    case 'enterprise':
      return { prefix: '/enterprises/{enterprise}', params: { enterprise: scope.enterprise } };
  }
}

const toRunner = (r: RunnerJson): GitHubRunner => ({
  id: r.id,
  name: r.name,
  os: r.os,
  status: r.status === 'online' ? 'online' : 'offline',
  busy: r.busy,
  labels: r.labels.map((l) => l.name),
});

/** JIT runners only carry the labels asked for; `self-hosted` is what workflows target them by. */
function withSelfHosted(labels: string[]): string[] {
  return labels.some((l) => l.toLowerCase() === 'self-hosted') ? labels : ['self-hosted', ...labels];
}

export class OctokitGitHub implements GitHubPort, WebhookDeliveriesPort, ScopeWebhooksPort {
  readonly webUrl?: string;
  private readonly octokit: Octokit;
  private readonly logger: GitHubLogger;
  private readonly timeoutMs: number;

  constructor(private readonly options: OctokitGitHubOptions) {
    this.webUrl = options.webUrl;
    this.logger = options.logger ?? silentLogger;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    const common = {
      baseUrl: options.apiUrl.replace(/\/+$/, ''),
      userAgent: 'runnerflow',
      // Octokit logs every answer that is not a 2xx as an error, but whether it is one is the port's
      // to say: a 404 for a runner already removed, 422 for a busy one and 409 for a JIT name taken
      // are answers, and warning about them taught operators to ignore warnings. A real failure
      // reaches the caller as a GitHubApiError naming its operation, and is counted by outcome.
      log: { debug: () => undefined, info: () => undefined, warn: (m: string) => this.logger.warn(m), error: (m: string) => this.logger.debug(m) },
    };
    // auth-app caches installation tokens (59 minutes of their 60) and mints a new one after.
    this.octokit =
      options.auth.type === 'pat'
        ? new Octokit({ ...common, auth: options.auth.token })
        : new Octokit({
            ...common,
            authStrategy: createAppAuth,
            auth: { appId: options.auth.appId, privateKey: options.auth.privateKey, installationId: options.auth.installationId },
          });
  }

  async createRunnerCredential(req: RunnerCredentialRequest): Promise<RunnerCredential> {
    if (!req.jit) {
      const res = await this.call('create_registration_token', 'POST', req.scope, '/actions/runners/registration-token', {});
      const data = res.data as { token: string; expires_at: string };
      return { kind: 'registration-token', token: data.token, expiresAt: data.expires_at };
    }
    const minted = await this.generateJitConfig(req);
    if (minted !== 'conflict') return minted;
    // A retried create after GitHub already minted this name: clear the leftover and mint again.
    req.signal?.throwIfAborted();
    const existing = await this.findRunnerByName(req.scope, req.name);
    if (existing) {
      if (existing.busy) throw new GitHubApiError(`generate_jitconfig: runner ${req.name} already exists and is running a job`, 409, false);
      // Online means an agent holds this registration: the machine an earlier attempt made, still
      // being made when this attempt looked for it. Removing it would leave that machine's runner
      // without a registration; the next attempt finds the machine instead.
      if (existing.status === 'online') throw new GitHubApiError(`generate_jitconfig: runner ${req.name} is online with an earlier attempt's registration; its machine is looked for again`, 409, true);
      req.signal?.throwIfAborted();
      const removed = await this.deleteRunner(req.scope, existing.id);
      if (removed === 'busy') throw new GitHubApiError(`generate_jitconfig: runner ${req.name} already exists and is running a job`, 409, false);
    }
    const again = await this.generateJitConfig(req);
    if (again === 'conflict') throw new GitHubApiError(`generate_jitconfig: runner ${req.name} still exists after removing it`, 409, true);
    return again;
  }

  async removeRunner(req: { scope: GitHubScope; name: string; runnerId?: number }): Promise<RemoveRunnerOutcome> {
    const id = req.runnerId ?? (await this.findRunnerByName(req.scope, req.name))?.id;
    if (id === undefined) return 'not_found';
    return this.deleteRunner(req.scope, id);
  }

  async findRunnerByName(scope: GitHubScope, name: string): Promise<GitHubRunner | undefined> {
    // The name filter makes this one call; paging on covers servers that ignore it.
    for (let page = 1; ; page++) {
      const res = await this.call('list_runners', 'GET', scope, '/actions/runners', { name, per_page: PAGE_SIZE, page });
      const data = res.data as { runners: RunnerJson[] };
      const found = data.runners.find((r) => r.name.toLowerCase() === name.toLowerCase());
      if (found) return toRunner(found);
      if (data.runners.length < PAGE_SIZE || !/rel="next"/.test(String(res.headers.link ?? ''))) return undefined;
    }
  }

  async listRunners(scope: GitHubScope): Promise<GitHubRunner[]> {
    return (await this.pages<RunnerJson>('list_runners', scope, '/actions/runners', {}, 'runners')).map(toRunner);
  }

  async listQueuedRuns(scope: Extract<GitHubScope, { kind: 'repo' }>): Promise<QueuedGitHubRun[]> {
    const runs = await this.pages<{ id: number; created_at: string }>('list_workflow_runs', scope, '/actions/runs', { status: 'queued' }, 'workflow_runs');
    return runs.map((run) => ({ id: run.id, createdAt: run.created_at }));
  }

  async listRecentlyPushedRepositories(scope: Extract<GitHubScope, { kind: 'org' }>, count: number): Promise<PushedRepository[]> {
    const perPage = Math.max(1, Math.min(PAGE_SIZE, Math.floor(count)));
    const res = await this.request('list_org_repositories', 'GET /orgs/{org}/repos', { org: scope.org, sort: 'pushed', direction: 'desc', per_page: perPage });
    const repos = res.data as { full_name: string; pushed_at?: string | null; archived?: boolean; disabled?: boolean }[];
    return repos.filter((r) => !r.archived && !r.disabled && r.pushed_at).map((r) => ({ repository: r.full_name, pushedAt: r.pushed_at! }));
  }

  async listOrgRepositoriesPage(scope: Extract<GitHubScope, { kind: 'org' }>, perPage: number, page: number): Promise<RepositoryPage> {
    const size = Math.max(1, Math.min(PAGE_SIZE, Math.floor(perPage)));
    const res = await this.request('list_org_repositories', 'GET /orgs/{org}/repos', { org: scope.org, sort: 'full_name', direction: 'asc', per_page: size, page: Math.max(1, Math.floor(page)) });
    const repos = res.data as { full_name: string; archived?: boolean; disabled?: boolean }[];
    return {
      repositories: repos.filter((r) => !r.archived && !r.disabled).map((r) => r.full_name),
      last: repos.length < size || !/rel="next"/.test(String(res.headers.link ?? '')),
    };
  }

  async listQueuedJobsOfRun(scope: Extract<GitHubScope, { kind: 'repo' }>, runId: number): Promise<QueuedGitHubJob[]> {
    const jobs = await this.pages<{ id: number; run_id: number; status: string; labels: string[]; created_at: string }>(
      'list_jobs_for_workflow_run',
      scope,
      `/actions/runs/${runId}/jobs`,
      { filter: 'latest' },
      'jobs',
    );
    return jobs
      .filter((job) => job.status === 'queued')
      .map((job) => ({ id: job.id, runId: job.run_id, labels: job.labels, repository: `${scope.owner}/${scope.repo}`, createdAt: job.created_at }));
  }

  async getJobStatus(scope: Extract<GitHubScope, { kind: 'repo' }>, jobId: number): Promise<GitHubJobStatus | undefined> {
    const res = await this.call('get_job_for_workflow_run', 'GET', scope, '/actions/jobs/{job_id}', { job_id: jobId }, [404]);
    if (res.status === 404) return undefined;
    return (res.data as { status: GitHubJobStatus }).status;
  }

  /** Every page of a listing whose items sit under `key`. */
  private async pages<T>(operation: string, scope: GitHubScope, suffix: string, params: Record<string, unknown>, key: string): Promise<T[]> {
    const all: T[] = [];
    for (let page = 1; ; page++) {
      const res = await this.call(operation, 'GET', scope, suffix, { ...params, per_page: PAGE_SIZE, page });
      const items = ((res.data as Record<string, unknown>)[key] ?? []) as T[];
      all.push(...items);
      if (items.length < PAGE_SIZE || !/rel="next"/.test(String(res.headers.link ?? ''))) return all;
    }
  }

  async listRunnerDownloads(scope: GitHubScope): Promise<RunnerTool[]> {
    const res = await this.call('list_runner_downloads', 'GET', scope, '/actions/runners/downloads', {});
    return (res.data as RunnerTool[]).map((t) => ({
      os: t.os,
      architecture: t.architecture,
      download_url: t.download_url,
      filename: t.filename,
      ...(t.sha256_checksum ? { sha256_checksum: t.sha256_checksum } : {}),
      ...(t.temp_download_token ? { temp_download_token: t.temp_download_token } : {}),
    }));
  }

  async rateLimit(): Promise<GitHubRateLimit> {
    const res = await this.request('rate_limit', 'GET /rate_limit', {});
    const { core } = (res.data as { resources: { core: { limit: number; remaining: number; reset: number } } }).resources;
    return { limit: core.limit, remaining: core.remaining, resetAt: new Date(core.reset * 1_000).toISOString() };
  }

  async listWebhookDeliveries(req: { cursor?: string }): Promise<{ deliveries: WebhookDelivery[]; nextCursor?: string }> {
    this.requireApp('list_webhook_deliveries');
    return this.deliveriesPage('list_webhook_deliveries', 'GET /app/hook/deliveries', {}, req.cursor);
  }

  async redeliverWebhook(deliveryId: number): Promise<'redelivered' | 'gone'> {
    this.requireApp('redeliver_webhook');
    return this.redeliver('redeliver_webhook', 'POST /app/hook/deliveries/{delivery_id}/attempts', { delivery_id: deliveryId });
  }

  async listWebhooks(scope: HookScope): Promise<ScopeWebhook[]> {
    const route = scopeRoute(scope);
    const res = await this.request('list_webhooks', `GET ${route.prefix}/hooks`, { ...route.params, per_page: PAGE_SIZE });
    const hooks = res.data as { id: number; active: boolean; events: string[]; config?: { url?: string } }[];
    return hooks.map((h) => ({ id: h.id, active: h.active, events: h.events, ...(h.config?.url ? { url: h.config.url } : {}) }));
  }

  webhookDeliveries(scope: HookScope, hookId: number): WebhookDeliveriesPort {
    const route = scopeRoute(scope);
    const params = { ...route.params, hook_id: hookId };
    return {
      listWebhookDeliveries: (req) => this.deliveriesPage('list_hook_deliveries', `GET ${route.prefix}/hooks/{hook_id}/deliveries`, params, req.cursor),
      redeliverWebhook: (deliveryId) => this.redeliver('redeliver_hook_delivery', `POST ${route.prefix}/hooks/{hook_id}/deliveries/{delivery_id}/attempts`, { ...params, delivery_id: deliveryId }),
    };
  }

  private async deliveriesPage(operation: string, endpoint: string, params: Record<string, unknown>, cursor: string | undefined): Promise<{ deliveries: WebhookDelivery[]; nextCursor?: string }> {
    const res = await this.request(operation, endpoint, { ...params, per_page: PAGE_SIZE, ...(cursor ? { cursor } : {}) });
    const items = res.data as { id: number; guid: string; delivered_at: string; redelivery: boolean; status_code: number; event: string; action: string | null }[];
    // GitHub pages this listing by an opaque cursor, handed out in the next link.
    const next = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))?.[1];
    const nextCursor = next ? (new URL(next).searchParams.get('cursor') ?? undefined) : undefined;
    return {
      deliveries: items.map((d) => ({ id: d.id, guid: d.guid, deliveredAt: d.delivered_at, redelivery: d.redelivery, statusCode: d.status_code, event: d.event, action: d.action })),
      ...(nextCursor ? { nextCursor } : {}),
    };
  }

  private async redeliver(operation: string, endpoint: string, params: Record<string, unknown>): Promise<'redelivered' | 'gone'> {
    // 404: no such attempt (older than GitHub keeps); 422: GitHub will not send it again.
    const res = await this.request(operation, endpoint, params, [404, 422]);
    return res.status === 404 || res.status === 422 ? 'gone' : 'redelivered';
  }

  private requireApp(operation: string): void {
    if (this.options.auth.type !== 'app') {
      throw new GitHubApiError(`${operation}: webhook deliveries are an App's, and credentials "${this.options.credentialsName}" are a token`, 400, false);
    }
  }

  private async generateJitConfig(req: RunnerCredentialRequest): Promise<RunnerCredential | 'conflict'> {
    const res = await this.call(
      'generate_jitconfig',
      'POST',
      req.scope,
      '/actions/runners/generate-jitconfig',
      { name: req.name, runner_group_id: req.runnerGroupId, labels: withSelfHosted(req.labels), work_folder: req.workFolder },
      [409],
    );
    if (res.status === 409) return 'conflict';
    const data = res.data as { runner: { id: number }; encoded_jit_config: string };
    return { kind: 'jit', runnerId: data.runner.id, encodedJitConfig: data.encoded_jit_config };
  }

  private async deleteRunner(scope: GitHubScope, runnerId: number): Promise<RemoveRunnerOutcome> {
    const res = await this.call('delete_runner', 'DELETE', scope, '/actions/runners/{runner_id}', { runner_id: runnerId }, [404, 422]);
    if (res.status === 404) return 'not_found';
    if (res.status === 422) return 'busy';
    return 'removed';
  }

  /**
   * One REST call. Statuses in `expected` are answers the caller interprets
   * (404 gone, 422 busy, 409 exists); every other failure becomes a port error.
   */
  private async call(
    operation: string,
    method: 'GET' | 'POST' | 'DELETE',
    scope: GitHubScope,
    suffix: string,
    params: Record<string, unknown>,
    expected: number[] = [],
  ): Promise<RawResponse> {
    const route = scopeRoute(scope);
    return this.request(operation, `${method} ${route.prefix}${suffix}`, { ...route.params, ...params }, expected);
  }

  private async request(operation: string, endpoint: string, params: Record<string, unknown>, expected: number[] = []): Promise<RawResponse> {
    let res: RawResponse;
    try {
      const answer = await this.octokit.request(endpoint, {
        ...params,
        request: { signal: AbortSignal.timeout(this.timeoutMs) },
      });
      res = { status: answer.status, data: answer.data as unknown, headers: answer.headers };
    } catch (err) {
      const failure = asHttpFailure(err);
      if (failure?.response) this.observe(operation, failure.status, failure.response.headers);
      if (failure?.status === 401) this.options.onUnauthorized?.();
      if (failure?.response && expected.includes(failure.status)) {
        res = { status: failure.status, data: failure.response.data, headers: failure.response.headers };
        this.count(operation, String(failure.status));
        return res;
      }
      const portError = toPortError(operation, err);
      this.count(operation, portError instanceof GitHubApiError ? (portError.retryable ? 'retryable_error' : 'error') : 'rate_limited');
      throw portError;
    }
    this.observe(operation, res.status, res.headers);
    this.count(operation, 'ok');
    return res;
  }

  private count(operation: string, outcome: string): void {
    githubRequests.inc({ operation, outcome });
  }

  private observe(operation: string, status: number, headers: RawResponse['headers']): void {
    const remaining = header(headers, 'x-ratelimit-remaining');
    if (remaining === undefined) return;
    const resource = header(headers, 'x-ratelimit-resource') ?? 'core';
    githubRateLimitRemaining.set({ credentials: this.options.credentialsName, resource }, Number(remaining));
    this.logger.debug('github rate limit', {
      credentials: this.options.credentialsName,
      operation,
      status,
      resource,
      remaining: Number(remaining),
      reset: header(headers, 'x-ratelimit-reset'),
    });
  }
}
