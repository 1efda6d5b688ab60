/**
 * ActionsServicePort over fetch, as GitHub's Go client (actions/scaleset) speaks
 * the protocol: a registration token buys the Actions service URL and an admin
 * JWT, renewed a minute before it expires or on a 401; sessions' queue tokens
 * stay in this object's memory (a restarted worker refreshes the session to get
 * a new one), so no secret is ever returned to workflow history.
 */
import { scaleSetLabels } from '../../domain/scale-set';
import { scopeUrl, GitHubApiError, GitHubRateLimitError, type GitHubScope, type RemoveRunnerOutcome } from '../port';
import { ActionsServiceError, type ActionsServicePort, type EnsureScaleSetRequest, type ScaleSetMessage, type SessionInfo } from './port';
import type {
  AcquirableJob,
  ActionsServiceAdminConnection,
  JobMessage,
  ListOf,
  RunnerGroup,
  RunnerReference,
  RunnerScaleSet,
  RunnerScaleSetJitRunnerConfig,
  RunnerScaleSetMessage,
  RunnerScaleSetSession,
} from './types';
import { JOB_MESSAGES_TYPE } from './types';

const SCALE_SETS = '_apis/runtime/runnerscalesets';
const AGENTS = '_apis/distributedtask/pools/0/agents';
const API_VERSION = '6.0-preview';
/**
 * Tries at minting a scale-set JIT config while its name conflicts: the leftover
 * may not be found yet, or its removal not have taken effect.
 */
const JIT_CONFLICT_ATTEMPTS = 3;
/** Renew the admin token this long before its `exp`, as GitHub's client does. */
const ADMIN_TOKEN_MARGIN_MS = 60_000;

export interface ActionsServiceClientOptions {
  /** REST API base (https://api.github.com, https://ghes/api/v3, or the simulator's URL). */
  apiUrl: string;
  /** Web base for the scope URL sent in the registration exchange. */
  webUrl?: string;
  scope: GitHubScope;
  /** A fresh registration token for the scope (through the REST port). */
  registrationToken(): Promise<string>;
  requestTimeoutMs?: number;
  /** Upper bound of one long poll (the service answers 202 after about 50 s). */
  longPollTimeoutMs?: number;
  /** Called once per HTTP request, for call counting. */
  onRequest?(operation: string): void;
}

interface Admin {
  url: string;
  token: string;
  expiresAt: number;
}
interface QueueAccess {
  url: string;
  token: string;
}

export function jwtExpiry(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

async function readJson(res: Response): Promise<unknown> {
  const text = (await res.text()).replace(/^\uFEFF/, '');
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function describe(body: unknown): string {
  if (typeof body === 'object' && body !== null) {
    const b = body as { message?: unknown; typeName?: unknown };
    if (typeof b.message === 'string') return b.message;
  }
  return typeof body === 'string' ? body.slice(0, 300) : '';
}

function typeName(body: unknown): string {
  return typeof body === 'object' && body !== null && typeof (body as { typeName?: unknown }).typeName === 'string'
    ? (body as { typeName: string }).typeName
    : '';
}


export class ActionsServiceClient implements ActionsServicePort {
  private admin?: Admin;
  private adminPending?: Promise<Admin>;
  private readonly queues = new Map<string, QueueAccess>();
  private readonly timeoutMs: number;
  private readonly longPollTimeoutMs: number;

  constructor(private readonly options: ActionsServiceClientOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.longPollTimeoutMs = options.longPollTimeoutMs ?? 70_000;
  }

  private async runnerGroupNamed(name: string): Promise<RunnerGroup> {
    const groups = (await this.service('get_runner_group', 'GET', `_apis/runtime/runnergroups/?groupName=${encodeURIComponent(name)}`)).body as ListOf<RunnerGroup>;
    const group = groups.value[0];
    if (!group) throw new ActionsServiceError(`runner group "${name}" not found`, 404, false, 'not_found');
    return group;
  }

  async ensureScaleSet(req: EnsureScaleSetRequest): Promise<RunnerScaleSet> {
    const group = await this.runnerGroupNamed(req.runnerGroup);
    const found = (await this.service('get_scale_set', 'GET', `${SCALE_SETS}?runnerGroupId=${group.id}&name=${encodeURIComponent(req.name)}`)).body as ListOf<RunnerScaleSet>;
    if (found.count > 1) throw new ActionsServiceError(`more than one scale set named "${req.name}" in runner group "${req.runnerGroup}"`, 200, false);
    if (found.value[0]) return found.value[0];
    const created = await this.service('create_scale_set', 'POST', SCALE_SETS, {
      name: req.name,
      runnerGroupId: group.id,
      labels: scaleSetLabels(req.name, req.labels).map((name) => ({ name, type: 'System' })),
      RunnerSetting: { ephemeral: true, isElastic: true, disableUpdate: true },
    });
    return created.body as RunnerScaleSet;
  }

  async moveScaleSet(scaleSetId: number, runnerGroup: string): Promise<'moved' | 'unchanged' | 'scale_set_gone'> {
    const group = await this.runnerGroupNamed(runnerGroup);
    const current = await this.service('get_scale_set', 'GET', `${SCALE_SETS}/${scaleSetId}`, undefined, [404]);
    if (current.status === 404) return 'scale_set_gone';
    if ((current.body as RunnerScaleSet).runnerGroupId === group.id) return 'unchanged';
    // Only the group: a PATCH names what it changes, and the labels it might carry are GitHub's to keep.
    const res = await this.service('update_scale_set', 'PATCH', `${SCALE_SETS}/${scaleSetId}`, { runnerGroupId: group.id }, [404]);
    return res.status === 404 ? 'scale_set_gone' : 'moved';
  }

  async renameScaleSet(scaleSetId: number, name: string): Promise<'renamed' | 'unchanged' | 'scale_set_gone'> {
    const current = await this.service('get_scale_set', 'GET', `${SCALE_SETS}/${scaleSetId}`, undefined, [404]);
    if (current.status === 404) return 'scale_set_gone';
    if ((current.body as RunnerScaleSet).name === name) return 'unchanged';
    // Only the name, as actions-runner-controller sends it: the group and labels are left as they are.
    const res = await this.service('update_scale_set', 'PATCH', `${SCALE_SETS}/${scaleSetId}`, { name }, [404]);
    return res.status === 404 ? 'scale_set_gone' : 'renamed';
  }

  async deleteScaleSet(scaleSetId: number): Promise<'deleted' | 'not_found'> {
    const res = await this.service('delete_scale_set', 'DELETE', `${SCALE_SETS}/${scaleSetId}`, undefined, [404]);
    return res.status === 404 ? 'not_found' : 'deleted';
  }

  async createSession(scaleSetId: number, ownerName: string): Promise<SessionInfo> {
    const res = await this.service('create_session', 'POST', `${SCALE_SETS}/${scaleSetId}/sessions`, { ownerName }, [409]);
    if (res.status === 409) {
      throw new ActionsServiceError(`scale set ${scaleSetId} already has a message session: ${describe(res.body)}`, 409, true, 'session_conflict');
    }
    return this.keep(res.body as RunnerScaleSetSession);
  }

  async refreshSession(scaleSetId: number, sessionId: string): Promise<SessionInfo> {
    const res = await this.service('refresh_session', 'PATCH', `${SCALE_SETS}/${scaleSetId}/sessions/${sessionId}`, undefined, [404]);
    if (res.status === 404) {
      this.queues.delete(sessionId);
      throw new ActionsServiceError(`message session ${sessionId} of scale set ${scaleSetId} no longer exists`, 404, false, 'not_found');
    }
    return this.keep(res.body as RunnerScaleSetSession);
  }

  async deleteSession(scaleSetId: number, sessionId: string): Promise<'deleted' | 'not_found'> {
    this.queues.delete(sessionId);
    const res = await this.service('delete_session', 'DELETE', `${SCALE_SETS}/${scaleSetId}/sessions/${sessionId}`, undefined, [400, 404]);
    // The service refuses to close a session that expired (400 RunnerScaleSetSessionExpiredException): it is gone all the same.
    if (res.status === 400 && !/SessionExpired/i.test(typeName(res.body))) throw this.failure('delete_session', res.status, res.body);
    return res.status === 400 || res.status === 404 ? 'not_found' : 'deleted';
  }

  async getMessage(req: { scaleSetId: number; sessionId: string; lastMessageId: number; maxCapacity: number; signal?: AbortSignal }): Promise<ScaleSetMessage | undefined> {
    const res = await this.onQueue(req.scaleSetId, req.sessionId, 'get_message', (queue) => {
      const url = new URL(queue.url);
      if (req.lastMessageId > 0) url.searchParams.set('lastMessageId', String(req.lastMessageId));
      return {
        url: url.toString(),
        method: 'GET',
        headers: { accept: `application/json; api-version=${API_VERSION}`, 'X-ScaleSetMaxCapacity': String(req.maxCapacity) },
        timeoutMs: this.longPollTimeoutMs,
        ...(req.signal ? { signal: req.signal } : {}),
      };
    });
    if (res.status === 202) return undefined;
    if (res.status !== 200) throw this.failure('get_message', res.status, res.body);
    const envelope = res.body as RunnerScaleSetMessage;
    if (envelope.messageType !== JOB_MESSAGES_TYPE) {
      // Handed up, not thrown: it stays first in the queue until deleted, so refusing it would stop every message after it.
      return { messageId: envelope.messageId, statistics: envelope.statistics ?? null, jobs: [], unsupportedType: String(envelope.messageType) };
    }
    const jobs = envelope.body ? (JSON.parse(envelope.body) as JobMessage[]) : [];
    return { messageId: envelope.messageId, statistics: envelope.statistics ?? null, jobs };
  }

  async deleteMessage(req: { scaleSetId: number; sessionId: string; messageId: number }): Promise<void> {
    const res = await this.onQueue(req.scaleSetId, req.sessionId, 'delete_message', (queue) => {
      const url = new URL(queue.url);
      url.pathname = `${url.pathname.replace(/\/+$/, '')}/${req.messageId}`;
      return { url: url.toString(), method: 'DELETE', headers: { 'content-type': 'application/json' }, timeoutMs: this.timeoutMs };
    });
    if (res.status !== 204 && res.status !== 404) throw this.failure('delete_message', res.status, res.body);
  }

  async acquireJobs(req: { scaleSetId: number; sessionId: string; requestIds: number[] }): Promise<number[]> {
    if (req.requestIds.length === 0) return [];
    const res = await this.onQueue(req.scaleSetId, req.sessionId, 'acquire_jobs', (queue, admin) => ({
      url: `${admin.url}/${SCALE_SETS}/${req.scaleSetId}/acquirejobs?api-version=${API_VERSION}`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(req.requestIds),
      timeoutMs: this.timeoutMs,
      token: queue.token,
    }));
    if (res.status !== 200) throw this.failure('acquire_jobs', res.status, res.body);
    return (res.body as ListOf<number>).value;
  }

  async listAcquirableJobs(scaleSetId: number): Promise<number[]> {
    const res = await this.service('get_acquirable_jobs', 'GET', `${SCALE_SETS}/${scaleSetId}/acquirablejobs`);
    // The service answers 204 with no body when nothing waits.
    if (res.status === 204) return [];
    const list = res.body as Partial<ListOf<Partial<AcquirableJob>>> | null;
    if (!list || !Array.isArray(list.value)) throw new ActionsServiceError('get_acquirable_jobs: the answer has no job list', res.status, true);
    return list.value.map((job) => job.runnerRequestId).filter((id): id is number => typeof id === 'number');
  }

  async generateJitConfig(scaleSetId: number, runnerName: string, workFolder: string, signal?: AbortSignal): Promise<{ runnerId: number; encodedJitConfig: string }> {
    for (let attempt = 1; ; attempt++) {
      const res = await this.service('generate_jit_config', 'POST', `${SCALE_SETS}/${scaleSetId}/generatejitconfig`, { name: runnerName, workFolder }, [409]);
      if (res.status !== 409) {
        const config = res.body as RunnerScaleSetJitRunnerConfig;
        return { runnerId: config.runner.id, encodedJitConfig: config.encodedJITConfig };
      }
      // The caller retries with backoff; looping here unbounded spends rate limit long after it stopped waiting.
      if (attempt >= JIT_CONFLICT_ATTEMPTS) {
        throw new ActionsServiceError(`generate_jit_config: runner ${runnerName} still exists after ${attempt} attempts to clear it`, 409, true);
      }
      // A retried create after the service already minted this name: clear the leftover, as the REST port does.
      signal?.throwIfAborted();
      const existing = await this.findRunnerByName(runnerName);
      signal?.throwIfAborted();
      if (existing && (await this.removeRunner(existing.id)) === 'busy') {
        throw new ActionsServiceError(`generate_jit_config: runner ${runnerName} already exists and is running a job`, 409, false);
      }
    }
  }

  async findRunnerByName(name: string): Promise<RunnerReference | undefined> {
    const res = await this.service('get_runner_by_name', 'GET', `${AGENTS}?agentName=${encodeURIComponent(name)}`);
    const list = res.body as ListOf<RunnerReference>;
    return list.value.find((r) => r.name.toLowerCase() === name.toLowerCase());
  }

  async removeRunner(runnerId: number): Promise<RemoveRunnerOutcome> {
    const res = await this.service('remove_runner', 'DELETE', `${AGENTS}/${runnerId}`, undefined, [400, 404, 422]);
    if (res.status === 404) return 'not_found';
    if (res.status === 400 || res.status === 422) {
      if (/JobStillRunning/i.test(typeName(res.body)) || res.status === 422) return 'busy';
      throw this.failure('remove_runner', res.status, res.body);
    }
    return 'removed';
  }

  private keep(session: RunnerScaleSetSession): SessionInfo {
    this.queues.set(session.sessionId, { url: session.messageQueueUrl, token: session.messageQueueAccessToken });
    return { sessionId: session.sessionId, ownerName: session.ownerName, statistics: session.statistics ?? null };
  }

  /**
   * A call with the session's queue token: a session unknown to this process (a
   * restarted worker) or a 401 (expired token) gets a refreshed session first, once.
   */
  private async onQueue(
    scaleSetId: number,
    sessionId: string,
    operation: string,
    build: (queue: QueueAccess, admin: Admin) => { url: string; method: string; headers: Record<string, string>; body?: string; timeoutMs: number; signal?: AbortSignal; token?: string },
  ): Promise<{ status: number; body: unknown }> {
    for (let attempt = 0; ; attempt++) {
      if (!this.queues.has(sessionId)) await this.refreshSession(scaleSetId, sessionId);
      const queue = this.queues.get(sessionId)!;
      const admin = await this.adminConnection();
      const r = build(queue, admin);
      const res = await this.send(operation, r.url, r.method, { ...r.headers, authorization: `Bearer ${r.token ?? queue.token}` }, r.body, r.timeoutMs, r.signal);
      if (res.status === 401 && attempt === 0) {
        this.queues.delete(sessionId);
        continue;
      }
      if (res.status === 401) throw new ActionsServiceError(`${operation}: the message queue token was refused after a session refresh`, 401, true, 'token_expired');
      if (res.status === 404 && operation !== 'delete_message') {
        this.queues.delete(sessionId);
        throw new ActionsServiceError(`${operation}: message session ${sessionId} no longer exists`, 404, false, 'not_found');
      }
      return res;
    }
  }

  /** An admin call to the Actions service; statuses in `expected` are answers, others errors. */
  private async service(operation: string, method: string, path: string, body?: unknown, expected: number[] = []): Promise<{ status: number; body: unknown }> {
    for (let attempt = 0; ; attempt++) {
      const admin = await this.adminConnection();
      const url = new URL(`${admin.url}/${path}`);
      if (!url.searchParams.has('api-version')) url.searchParams.set('api-version', API_VERSION);
      const res = await this.send(
        operation,
        url.toString(),
        method,
        { 'content-type': 'application/json', authorization: `Bearer ${admin.token}` },
        body === undefined ? undefined : JSON.stringify(body),
        this.timeoutMs,
      );
      if (res.status === 401 && attempt === 0) {
        this.admin = undefined;
        continue;
      }
      if (res.status >= 200 && res.status < 300) return res;
      if (expected.includes(res.status)) return res;
      throw this.failure(operation, res.status, res.body);
    }
  }

  private async adminConnection(): Promise<Admin> {
    if (this.admin && this.admin.expiresAt - ADMIN_TOKEN_MARGIN_MS > Date.now()) return this.admin;
    this.adminPending ??= this.register().finally(() => (this.adminPending = undefined));
    this.admin = await this.adminPending;
    return this.admin;
  }

  private async register(): Promise<Admin> {
    const registrationToken = await this.options.registrationToken();
    const url = `${this.options.apiUrl.replace(/\/+$/, '')}/actions/runner-registration`;
    const res = await this.send(
      'runner_registration',
      url,
      'POST',
      { 'content-type': 'application/json', authorization: `RemoteAuth ${registrationToken}` },
      JSON.stringify({ url: scopeUrl(this.options.scope, this.options.webUrl), runner_event: 'register' }),
      this.timeoutMs,
    );
    if (res.status < 200 || res.status > 299) throw this.failure('runner_registration', res.status, res.body);
    const conn = res.body as ActionsServiceAdminConnection;
    if (!conn || typeof conn.url !== 'string' || typeof conn.token !== 'string') {
      throw new ActionsServiceError('runner_registration: the answer has no Actions service url and token', res.status, true);
    }
    return { url: conn.url.replace(/\/+$/, ''), token: conn.token, expiresAt: jwtExpiry(conn.token) ?? Date.now() + 10 * 60_000 };
  }

  private async send(
    operation: string,
    url: string,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<{ status: number; body: unknown; headers: Headers }> {
    this.options.onRequest?.(operation);
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const res = await fetch(url, {
        method,
        headers: { 'user-agent': 'runnerflow', ...headers },
        ...(body !== undefined ? { body } : {}),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      const parsed = await readJson(res);
      if (res.status === 429 || (res.status === 403 && res.headers.get('x-ratelimit-remaining') === '0')) {
        const retryAfter = Number(res.headers.get('retry-after'));
        const reset = Number(res.headers.get('x-ratelimit-reset'));
        const waitMs = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : Number.isFinite(reset) && reset > 0 ? Math.max(1000, reset * 1000 - Date.now()) : 60_000;
        throw new GitHubRateLimitError(res.status === 429 ? 'secondary' : 'primary', waitMs, `${operation}: Actions service rate limit; retry in ${Math.ceil(waitMs / 1000)}s`);
      }
      return { status: res.status, body: parsed, headers: res.headers };
    } catch (err) {
      if (err instanceof GitHubApiError || err instanceof GitHubRateLimitError) throw err;
      if (signal?.aborted) throw err;
      throw new ActionsServiceError(`${operation}: Actions service unreachable: ${(err as Error).message}`, undefined, true);
    }
  }

  private failure(operation: string, status: number, body: unknown): ActionsServiceError {
    const detail = describe(body);
    const message = `${operation}: Actions service answered ${status}${detail ? `: ${detail}` : ''}`;
    if (status === 404) return new ActionsServiceError(message, status, false, 'not_found');
    if (status === 401) return new ActionsServiceError(message, status, true, 'token_expired');
    return new ActionsServiceError(message, status, status >= 500 || status === 408);
  }
}
