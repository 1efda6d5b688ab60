/**
 * The GitHub port: everything runnerflow asks of GitHub's REST API.
 * The real implementation is Octokit-based (github/octokit-github.ts); tests
 * point it at the project's GitHub simulator.
 */

export type GitHubScope =
  | { kind: 'repo'; owner: string; repo: string }
  | { kind: 'org'; org: string }
  | { kind: 'enterprise'; enterprise: string };

/**
 * The label every runner of an installation is registered with, as GARM adds its
 * `runner-controller-id`: runner names and pool labels may repeat across installations
 * in one organisation (staging and production, an old and a new cluster), and the sweep
 * removes only registrations that carry its own installation's label.
 */
export function controllerLabel(controllerId: string): string {
  return `runnerflow-controller:${controllerId}`;
}

export interface RunnerCredentialRequest {
  scope: GitHubScope;
  /** The runner name: equal to the instance name. */
  name: string;
  labels: string[];
  /** Runner group id (org/enterprise scopes); 1 is GitHub's default group. */
  runnerGroupId: number;
  workFolder: string;
  /** JIT configs only exist for ephemeral runners; others get a registration token. */
  jit: boolean;
  /**
   * Aborted when the attempt asking was given up on. Such an attempt removes no same-named
   * leftover: that may be the registration its successor minted, on another worker, for the
   * machine it is making.
   */
  signal?: AbortSignal;
}

export type RunnerCredential =
  | { kind: 'jit'; runnerId: number; encodedJitConfig: string }
  | { kind: 'registration-token'; token: string; expiresAt: string };

export type RemoveRunnerOutcome =
  /** GitHub removed it (204). */
  | 'removed'
  /** GitHub does not know it (404): already gone, which is what we wanted. */
  | 'not_found'
  /** GitHub refused (422): the runner is running a job. Never retried blindly. */
  | 'busy';

export interface GitHubRunner {
  id: number;
  name: string;
  os: string;
  status: 'online' | 'offline';
  busy: boolean;
  labels: string[];
}

/** A repository's workflow run GitHub still has queued. */
export interface QueuedGitHubRun {
  id: number;
  createdAt: string;
}

/** An organisation's repository and when something was last pushed to it. */
/** One page of an organisation's repositories in name order. */
export interface RepositoryPage {
  /** owner/repo, archived and disabled ones left out. */
  repositories: string[];
  /** No page follows: the next round starts again at the first. */
  last: boolean;
}

export interface PushedRepository {
  /** owner/repo */
  repository: string;
  pushedAt: string;
}

/** A job GitHub still has queued, from a repository's queued workflow runs. */
export interface QueuedGitHubJob {
  id: number;
  runId: number;
  labels: string[];
  /** owner/repo */
  repository: string;
  createdAt: string;
}

/** A job's status as GitHub's REST API gives it; `queued` is the only one a runner may still be wanted for. */
export type GitHubJobStatus = 'queued' | 'in_progress' | 'completed' | 'waiting' | 'requested' | 'pending';

export interface GitHubPort {
  /** Web base (https://github.com or a GHES host) for runner URLs; github.com when absent. */
  readonly webUrl?: string;
  createRunnerCredential(req: RunnerCredentialRequest): Promise<RunnerCredential>;
  /** Remove by id when known, else by name (looked up first). */
  removeRunner(req: { scope: GitHubScope; name: string; runnerId?: number }): Promise<RemoveRunnerOutcome>;
  findRunnerByName(scope: GitHubScope, name: string): Promise<GitHubRunner | undefined>;
  /**
   * Every runner registered in the scope, with online/offline and busy: one paginated
   * listing (100 per page), so liveness and the sweep cost a call per page, not per runner.
   */
  listRunners(scope: GitHubScope): Promise<GitHubRunner[]>;
  /**
   * A repository's queued workflow runs: one paginated listing. GitHub offers no such
   * listing for an organisation or enterprise, nor one of queued jobs across runs.
   */
  listQueuedRuns(scope: Extract<GitHubScope, { kind: 'repo' }>): Promise<QueuedGitHubRun[]>;
  /**
   * The organisation's repositories most lately pushed to, most lately first: one call for at
   * most 100. Most workflow runs start from a push, so a repository with a job whose `queued`
   * webhook was lost is mostly among them. Archived and disabled repositories run nothing and
   * are left out.
   */
  listRecentlyPushedRepositories(scope: Extract<GitHubScope, { kind: 'org' }>, count: number): Promise<PushedRepository[]>;
  /** Page `page` (from 1) of the organisation's repositories in name order, `perPage` a page: one call. */
  listOrgRepositoriesPage(scope: Extract<GitHubScope, { kind: 'org' }>, perPage: number, page: number): Promise<RepositoryPage>;
  /** The jobs of one run still queued: a call (per page) for each run looked into. */
  listQueuedJobsOfRun(scope: Extract<GitHubScope, { kind: 'repo' }>, runId: number): Promise<QueuedGitHubJob[]>;
  /** Where one job stands now (one call); undefined when GitHub no longer has it. */
  getJobStatus(scope: Extract<GitHubScope, { kind: 'repo' }>, jobId: number): Promise<GitHubJobStatus | undefined>;
  /** Runner tools downloads for the scope (GARM passes them to providers). */
  listRunnerDownloads(scope: GitHubScope): Promise<import('../providers/port.js').RunnerTool[]>;
  /**
   * The credentials' REST rate limit as it stands: one call, which GitHub does not count
   * against it. It fails as any call does when GitHub refuses the credentials.
   */
  rateLimit(): Promise<GitHubRateLimit>;
}

/** How many REST calls the credentials have left in GitHub's hourly window, and when it starts again. */
export interface GitHubRateLimit {
  limit: number;
  remaining: number;
  resetAt: string;
}

/** One attempt at delivering one of a webhook's events, as GitHub lists them. */
export interface WebhookDelivery {
  /** The attempt's id: what a redelivery names. A redelivery is an attempt of its own. */
  id: number;
  /** The delivery's GUID (`X-GitHub-Delivery`), the same for every attempt at it. */
  guid: string;
  deliveredAt: string;
  redelivery: boolean;
  /** The receiver's HTTP status; 0 when it could not be reached or did not answer in time. */
  statusCode: number;
  event: string;
  action: string | null;
}

/**
 * One webhook's deliveries: GitHub does not retry a failed delivery by itself, but keeps
 * the attempts of the last three days and sends one again when asked. A GitHub App's own
 * webhook is reached with the App's JWT; a repository's or organisation's through
 * `ScopeWebhooksPort`.
 */
export interface WebhookDeliveriesPort {
  /** One page of attempts, newest first; `nextCursor` continues with older ones. */
  listWebhookDeliveries(req: { cursor?: string }): Promise<{ deliveries: WebhookDelivery[]; nextCursor?: string }>;
  /** `gone` when GitHub no longer has the attempt, or will not send it again. */
  redeliverWebhook(deliveryId: number): Promise<'redelivered' | 'gone'>;
}

/** The scopes that have webhooks of their own: an enterprise's are not reachable with a token. */
export type HookScope = Exclude<GitHubScope, { kind: 'enterprise' }>;

/** A repository's or organisation's webhook, as GitHub lists it. */
export interface ScopeWebhook {
  id: number;
  active: boolean;
  /** `*` stands for every event. */
  events: string[];
  /** Where GitHub delivers (`config.url`). */
  url?: string;
}

/**
 * Token credentials have no App webhook: runnerflow's webhook is one a repository or an
 * organisation has, and its deliveries are read and sent again through its hook id.
 */
export interface ScopeWebhooksPort {
  /** One call per scope (a repository or organisation has at most a few dozen webhooks). */
  listWebhooks(scope: HookScope): Promise<ScopeWebhook[]>;
  webhookDeliveries(scope: HookScope, hookId: number): WebhookDeliveriesPort;
}

/**
 * GitHub asked us to slow down. `retryAfterMs` is how long until a call may be
 * made again; activities turn it into their next retry delay so a rate-limited
 * lifecycle sleeps durably in Temporal instead of spinning.
 */
export class GitHubRateLimitError extends Error {
  constructor(
    readonly kind: 'primary' | 'secondary',
    readonly retryAfterMs: number,
    message?: string,
  ) {
    super(message ?? `GitHub ${kind} rate limit: retry in ${Math.ceil(retryAfterMs / 1000)}s`);
    this.name = 'GitHubRateLimitError';
  }
}

/** Any other GitHub failure. `retryable` is false for 4xx answers that will not change on retry. */
export class GitHubApiError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'GitHubApiError';
  }
}

/**
 * GitHub would not show these credentials what they asked for: 404 (what it answers for a private
 * repository, or one deleted or renamed) or 403 (a permission they lack). Rate limits are
 * `GitHubRateLimitError`, never this.
 */
export function isAccessRefused(err: unknown): boolean {
  return err instanceof GitHubApiError && (err.status === 403 || err.status === 404);
}

export function scopeUrl(scope: GitHubScope, webBaseUrl = 'https://github.com'): string {
  const base = webBaseUrl.replace(/\/+$/, '');
  switch (scope.kind) {
    case 'repo':
      return `${base}/${scope.owner}/${scope.repo}`;
    case 'org':
      return `${base}/${scope.org}`;
    case 'enterprise':
      return `${base}/enterprises/${scope.enterprise}`;
  }
}

export function scopeKey(scope: GitHubScope): string {
  switch (scope.kind) {
    case 'repo':
      return `repo:${scope.owner}/${scope.repo}`;
    case 'org':
      return `org:${scope.org}`;
    case 'enterprise':
      return `enterprise:${scope.enterprise}`;
  }
}
