/**
 * The simulated GitHub REST endpoints for self-hosted runners, with GitHub's
 * status codes and bodies. Faults and rate-limit headers are applied around
 * these by the server.
 */
import type { GitHubScope } from '../port';
import type { SimAgents } from './agents';
import type { DeliveryAttempt } from './webhook-sender';
import type { SimResponse } from './http-util';
import { isRecord } from './http-util';
import { encodeJitConfig } from './jit-config';
import { SERVED_OPERATIONS, type ServedOperation } from './served-operations';
import { randomToken, registrationTokenValue, type SimState } from './sim-state';
import { SimWorkflowRuns } from './workflow-runs';

export interface ApiRequest {
  op: ServedOperation;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  /** The URL the client called, to build `Link` headers from. */
  url: URL;
}

const DOCS = 'https://docs.github.com/rest/actions/self-hosted-runners';
const RUNNER_VERSION = '2.329.0';

export const githubError = (status: number, message: string, documentationUrl = DOCS): SimResponse => ({
  status,
  body: { message, documentation_url: documentationUrl, status: String(status) },
});

interface CompiledRoute {
  op: ServedOperation;
  pattern: RegExp;
  names: string[];
}

const ROUTES: CompiledRoute[] = SERVED_OPERATIONS.map((op) => {
  const names: string[] = [];
  const source = op.template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { op, pattern: new RegExp(`^${source}$`), names };
});

/** Literal segments win over `{runner_id}`, so `/downloads` is not read as a runner id. */
export function matchRoute(method: string, path: string): { op: ServedOperation; params: Record<string, string> } | 'method_not_allowed' | undefined {
  let pathMatched = false;
  const candidates = ROUTES.filter((r) => r.pattern.test(path)).sort((a, b) => a.names.length - b.names.length);
  for (const route of candidates) {
    pathMatched = true;
    if (route.op.method !== method) continue;
    const values = route.pattern.exec(path)?.slice(1) ?? [];
    if (route.names.includes('runner_id') && !/^\d+$/.test(values[route.names.indexOf('runner_id')] ?? '')) continue;
    const params = Object.fromEntries(route.names.map((n, i) => [n, decodeURIComponent(values[i] ?? '')]));
    return { op: route.op, params };
  }
  return pathMatched ? 'method_not_allowed' : undefined;
}

function scopeOf(op: ServedOperation, params: Record<string, string>): GitHubScope | undefined {
  switch (op.scope) {
    case 'repo':
      return { kind: 'repo', owner: params.owner ?? '', repo: params.repo ?? '' };
    case 'org':
      return { kind: 'org', org: params.org ?? '' };
    case 'enterprise':
      return { kind: 'enterprise', enterprise: params.enterprise ?? '' };
    case 'app':
      return undefined;
  }
}

function runnerDownloads(): Record<string, string>[] {
  const files: [string, string, string][] = [
    ['osx', 'x64', 'tar.gz'],
    ['osx', 'arm64', 'tar.gz'],
    ['linux', 'x64', 'tar.gz'],
    ['linux', 'arm', 'tar.gz'],
    ['linux', 'arm64', 'tar.gz'],
    ['win', 'x64', 'zip'],
    ['win', 'arm64', 'zip'],
  ];
  return files.map(([os, architecture, ext]) => {
    const filename = `actions-runner-${os}-${architecture}-${RUNNER_VERSION}.${ext}`;
    return {
      os,
      architecture,
      download_url: `https://github.com/actions/runner/releases/download/v${RUNNER_VERSION}/${filename}`,
      filename,
      sha256_checksum: Buffer.from(filename).toString('hex').padEnd(64, '0').slice(0, 64),
    };
  });
}

export function linkHeader(url: URL, page: number, lastPage: number): string | undefined {
  const link = (p: number, rel: string): string => {
    const u = new URL(url);
    u.searchParams.set('page', String(p));
    return `<${u.toString()}>; rel="${rel}"`;
  };
  const parts: string[] = [];
  if (page > 1) parts.push(link(page - 1, 'prev'));
  if (page < lastPage) parts.push(link(page + 1, 'next'), link(lastPage, 'last'));
  if (page > 1) parts.push(link(1, 'first'));
  return parts.length > 0 ? parts.join(', ') : undefined;
}

function validateJitBody(body: unknown): { name: string; runnerGroupId: number; labels: string[]; workFolder: string } | string {
  if (!isRecord(body)) return 'Invalid request.\n\nFor \'links/0/schema\', nil is not an object.';
  const { name, runner_group_id: group, labels, work_folder: workFolder } = body;
  if (typeof name !== 'string' || name === '') return 'Invalid request.\n\n"name" wasn\'t supplied.';
  if (typeof group !== 'number' || !Number.isInteger(group)) return 'Invalid request.\n\n"runner_group_id" wasn\'t supplied.';
  if (!Array.isArray(labels) || labels.length < 1 || labels.length > 100 || !labels.every((l) => typeof l === 'string')) {
    return 'Invalid request.\n\n"labels" must have between 1 and 100 string items.';
  }
  if (workFolder !== undefined && typeof workFolder !== 'string') return 'Invalid request.\n\n"work_folder" must be a string.';
  return { name, runnerGroupId: group, labels: labels as string[], workFolder: (workFolder as string | undefined) ?? '_work' };
}

const inAnHour = (): string => new Date(Date.now() + 3_600_000).toISOString();

/**
 * What the webhook endpoints read and redeliver: the simulator's webhook sender. Its one
 * webhook is listed as the App's, and as every repository's and organisation's, each of
 * those seeing only the deliveries of its own repositories.
 */
export interface SimHookDeliveries {
  readonly hookId: number;
  readonly target: { url?: string; urls?: string[] };
  readonly attempts: readonly DeliveryAttempt[];
  redeliverAttempt(attemptId: number): boolean;
}

const deliveryItem = (a: DeliveryAttempt): Record<string, unknown> => ({
  id: a.id,
  guid: a.guid,
  delivered_at: a.deliveredAt,
  redelivery: a.redelivery,
  duration: a.durationS,
  status: a.status,
  status_code: a.statusCode,
  event: a.event,
  action: a.action || null,
  installation_id: 1,
  repository_id: null,
});

export class SimGitHubApi {
  private readonly runs: SimWorkflowRuns;

  constructor(
    private readonly state: SimState,
    private readonly agents: SimAgents,
    private readonly serverUrl: () => string,
    private readonly hookDeliveries?: SimHookDeliveries,
  ) {
    this.runs = new SimWorkflowRuns(state, linkHeader);
  }

  /**
   * Newest first, `per_page` at a time (30 by default, at most 100), paged by an opaque
   * `cursor` given in the `Link` header's next link, as GitHub pages this listing.
   */
  private listDeliveries(req: ApiRequest, inScope: (a: DeliveryAttempt) => boolean = () => true): SimResponse {
    const perPage = Math.min(100, Math.max(1, Number(req.query.get('per_page') ?? 30) || 30));
    const cursor = req.query.get('cursor');
    const before = cursor && /^v1_\d+$/.test(cursor) ? Number(cursor.slice(3)) : Number.POSITIVE_INFINITY;
    const newestFirst = [...(this.hookDeliveries?.attempts ?? [])].reverse().filter((a) => a.id < before && inScope(a));
    const page = newestFirst.slice(0, perPage);
    const headers: Record<string, string> = {};
    if (newestFirst.length > perPage) {
      const next = new URL(req.url);
      next.searchParams.set('per_page', String(perPage));
      next.searchParams.set('cursor', `v1_${page[page.length - 1]!.id}`);
      headers.link = `<${next.toString()}>; rel="next"`;
    }
    return { status: 200, body: page.map(deliveryItem), headers };
  }

  /** The webhook as a repository (`Webhook`) or an organisation (`Org Hook`) lists it. */
  private hookJson(scope: GitHubScope, req: ApiRequest): Record<string, unknown> | undefined {
    const hooks = this.hookDeliveries;
    const target = hooks?.target.url ?? hooks?.target.urls?.[0];
    if (!hooks || !target) return undefined;
    const base = `${this.serverUrl()}${new URL(req.url).pathname.replace(/\/hooks.*$/, '')}/hooks/${hooks.hookId}`;
    const at = new Date(0).toISOString();
    return {
      type: scope.kind === 'org' ? 'Organization' : 'Repository',
      id: hooks.hookId,
      name: 'web',
      active: true,
      events: ['workflow_job'],
      config: { url: target, content_type: 'json', insecure_ssl: '0' },
      updated_at: at,
      created_at: at,
      url: base,
      ping_url: `${base}/pings`,
      deliveries_url: `${base}/deliveries`,
      ...(scope.kind === 'repo' ? { test_url: `${base}/test`, last_response: { code: null, status: 'unused', message: null } } : {}),
    };
  }

  /** A repository's or organisation's webhook: its deliveries are those of its own repositories. */
  private hookRequest(scope: GitHubScope, req: ApiRequest): SimResponse {
    const inScope = (a: DeliveryAttempt): boolean => {
      const repository = a.repository?.toLowerCase() ?? '';
      return scope.kind === 'repo' ? repository === `${scope.owner}/${scope.repo}`.toLowerCase() : scope.kind === 'org' && repository.startsWith(`${scope.org.toLowerCase()}/`);
    };
    if (req.op.name === 'list-hooks') {
      const hook = this.hookJson(scope, req);
      return { status: 200, body: hook ? [hook] : [] };
    }
    if (String(this.hookDeliveries?.hookId) !== req.params.hook_id) return githubError(404, 'Not Found');
    if (req.op.name === 'list-hook-deliveries') return this.listDeliveries(req, inScope);
    const id = Number(req.params.delivery_id);
    const attempt = this.hookDeliveries?.attempts.find((a) => a.id === id);
    return attempt && inScope(attempt) && this.hookDeliveries?.redeliverAttempt(id) ? { status: 202, body: {} } : githubError(404, 'Not Found');
  }

  handle(req: ApiRequest): SimResponse {
    if (req.op.name === 'list-webhook-deliveries') return this.listDeliveries(req);
    if (req.op.name === 'redeliver-webhook-delivery') {
      const id = Number(req.params.delivery_id);
      return Number.isInteger(id) && this.hookDeliveries?.redeliverAttempt(id) ? { status: 202, body: {} } : githubError(404, 'Not Found');
    }
    const scope = scopeOf(req.op, req.params);
    if (!scope) {
      return {
        status: 201,
        body: {
          token: `ghs_${randomToken(27)}`,
          expires_at: inAnHour(),
          permissions: { administration: 'write', organization_self_hosted_runners: 'write' },
          repository_selection: 'all',
        },
      };
    }
    const runnerId = Number(req.params.runner_id);
    switch (req.op.name) {
      case 'list-runners':
        return this.list(scope, req);
      case 'get-runner': {
        const runner = this.state.runnerIn(scope, runnerId);
        return runner ? { status: 200, body: this.state.runnerJson(runner) } : githubError(404, 'Not Found');
      }
      case 'delete-runner': {
        const runner = this.state.runnerIn(scope, runnerId);
        if (!runner) return githubError(404, 'Not Found');
        if (runner.busy) return githubError(422, `Bad request - Runner "${runner.name}" is still running a job"`);
        this.state.runners.delete(runner.id);
        this.agents.runnerRemoved(runner.id);
        return { status: 204 };
      }
      case 'registration-token':
      case 'remove-token':
        return { status: 201, body: { token: registrationTokenValue(), expires_at: inAnHour() } };
      case 'runner-downloads':
        return { status: 200, body: runnerDownloads() };
      case 'generate-jitconfig':
        return this.generateJitConfig(scope, req.body);
      case 'installation-access-token':
        return githubError(404, 'Not Found');
      case 'list-org-repositories':
        return this.runs.listOrgRepositories(req.params.org ?? '', req.query, req.url);
      case 'list-workflow-runs':
        return this.runs.listRuns(req.params.owner ?? '', req.params.repo ?? '', req.query, req.url);
      case 'list-jobs-for-workflow-run':
        return this.runs.listJobs(req.params.owner ?? '', req.params.repo ?? '', Number(req.params.run_id), req.query, req.url);
      case 'get-job-for-workflow-run':
        return this.runs.getJob(req.params.owner ?? '', req.params.repo ?? '', Number(req.params.job_id)) ?? githubError(404, 'Not Found');
      case 'list-hooks':
      case 'list-hook-deliveries':
      case 'redeliver-hook-delivery':
        return this.hookRequest(scope, req);
      case 'rate-limit':
        // The server answers it from its rate limit window; it reaches no scope.
        return githubError(404, 'Not Found');
    }
  }

  private list(scope: GitHubScope, req: ApiRequest): SimResponse {
    const perPage = Math.min(100, Math.max(1, Number(req.query.get('per_page') ?? 30) || 30));
    const page = Math.max(1, Number(req.query.get('page') ?? 1) || 1);
    const name = req.query.get('name');
    const all = this.state.runnersIn(scope).filter((r) => name === null || r.name.toLowerCase() === name.toLowerCase());
    const lastPage = Math.max(1, Math.ceil(all.length / perPage));
    const runners = all.slice((page - 1) * perPage, page * perPage).map((r) => this.state.runnerJson(r));
    const link = linkHeader(req.url, page, lastPage);
    return { status: 200, body: { total_count: all.length, runners }, headers: link ? { link } : undefined };
  }

  private generateJitConfig(scope: GitHubScope, body: unknown): SimResponse {
    const input = validateJitBody(body);
    if (typeof input === 'string') return githubError(422, input);
    if (this.state.runnerNamed(scope, input.name)) {
      return githubError(409, `Already exists - A runner with the name ${input.name} already exists.`);
    }
    const secret = randomToken();
    const runner = this.state.addRunner({
      name: input.name,
      scope,
      labels: input.labels,
      runnerGroupId: input.runnerGroupId,
      ephemeral: true,
      jitSecret: secret,
    });
    const encoded = encodeJitConfig({ runnerId: runner.id, runnerName: runner.name, secret, serverUrl: this.serverUrl(), workFolder: input.workFolder });
    return { status: 201, body: { runner: this.state.runnerJson(runner), encoded_jit_config: encoded } };
  }
}
