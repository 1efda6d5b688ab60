/**
 * The simulated Actions service's HTTP side: the registration exchange, scale
 * sets, runner groups, message sessions (409 on conflict), the long-polled
 * message queue with statistics, job acquisition, scale-set JIT configs and
 * runner removal, with the status codes and JSON keys GitHub's Go client
 * expects. Faults (expired tokens, lost sessions, conflicts, redelivery, slow
 * polls, 5xx) are applied here.
 */
import type { IncomingMessage } from 'node:http';
import type { RunnerScaleSetSession } from '../actions/types';
import { JOB_MESSAGES_TYPE } from '../actions/types';
import type { GitHubScope } from '../port';
import { matchActionsRoute, type ActionsOperationName } from './actions-routes';
import type { FaultPlan } from './faults';
import { isRecord, sleep, type SimResponse } from './http-util';
import { encodeJitConfig } from './jit-config';
import { simJwt, type SimScaleSets } from './scale-sets';
import { randomToken, type SimState } from './sim-state';

export interface ActionsServiceOptions {
  /** How long a poll waits for a message before answering 202 (GitHub: about 50 s). */
  longPollMs: number;
  adminTokenTtlMs: number;
  queueTokenTtlMs: number;
}

/** The service's error body: a .NET exception name and a message. */
const actionsError = (status: number, typeName: string, message: string): SimResponse => ({
  status,
  body: { $id: '1', innerException: null, message, typeName: `GitHub.DistributedTask.WebApi.${typeName}, GitHub.DistributedTask.WebApi`, typeKey: typeName, errorCode: 0, eventId: 3000 },
});

function scopeFromUrl(raw: unknown): GitHubScope | undefined {
  if (typeof raw !== 'string') return undefined;
  let parts: string[];
  try {
    parts = new URL(raw).pathname.split('/').filter(Boolean);
  } catch {
    return undefined;
  }
  if (parts[0] === 'enterprises' && parts.length === 2) return { kind: 'enterprise', enterprise: parts[1]! };
  if (parts.length === 1) return { kind: 'org', org: parts[0]! };
  if (parts.length === 2) return { kind: 'repo', owner: parts[0]!, repo: parts[1]! };
  return undefined;
}

export class SimActionsService {
  private readonly adminTokens = new Map<string, { scope: GitHubScope; expiresAt: number }>();
  /** Largest X-ScaleSetMaxCapacity seen per scale set, for tests. */
  readonly maxCapacity = new Map<number, number>();

  constructor(
    private readonly state: SimState,
    private readonly scaleSets: SimScaleSets,
    private readonly faults: FaultPlan,
    private readonly options: ActionsServiceOptions,
    private readonly serverUrl: () => string,
    private readonly runnerRemoved: (runnerId: number) => void,
  ) {}

  operationOf(method: string, path: string): ActionsOperationName | undefined {
    return matchActionsRoute(method, path)?.route.name;
  }

  async handle(req: IncomingMessage, url: URL, path: string, body: unknown): Promise<SimResponse> {
    const method = req.method ?? 'GET';
    const matched = matchActionsRoute(method, path);
    if (!matched) return actionsError(404, 'ResourceNotFoundException', `no route ${method} ${path}`);
    const { route, args } = matched;
    const latency = this.faults.forRequest('latency', route.name);
    if (latency) await sleep(latency.ms);
    const serverError = this.faults.forRequest('server-error', route.name);
    if (serverError) return actionsError(serverError.status ?? 503, 'ServiceUnavailableException', 'The service is temporarily unavailable.');

    const auth = String(req.headers.authorization ?? '');
    if (route.auth === 'registration') return this.register(auth, body);
    const bearer = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (this.faults.forRequest('expire-token', route.name)) {
      // The token presented has expired: it stays refused, so the client must get a new one.
      this.adminTokens.delete(bearer);
      if (route.auth === 'queue') this.scaleSets.expireQueueTokens();
      return actionsError(401, 'UnauthorizedException', 'The access token has expired.');
    }
    if (route.auth === 'admin') {
      const admin = this.adminTokens.get(bearer);
      if (!admin || admin.expiresAt <= Date.now()) return actionsError(401, 'UnauthorizedException', 'Invalid or expired admin token.');
      if (url.searchParams.get('api-version') !== '6.0-preview') return actionsError(400, 'InvalidApiVersionException', 'api-version=6.0-preview is required');
      return this.admin(route.name, args, url, body, admin.scope);
    }
    return this.queue(route.name, args, url, req, body, bearer);
  }

  private register(auth: string, body: unknown): SimResponse {
    const token = auth.startsWith('RemoteAuth ') ? auth.slice('RemoteAuth '.length) : '';
    if (!/^[A-Z0-9]{29}$/.test(token)) return { status: 401, body: { message: 'Bad credentials' } };
    if (!isRecord(body) || body.runner_event !== 'register') return { status: 400, body: { message: 'runner_event must be "register"' } };
    const scope = scopeFromUrl(body.url);
    if (!scope) return { status: 400, body: { message: 'url must name a repository, organisation or enterprise' } };
    const jwt = simJwt(this.options.adminTokenTtlMs, { scope: scope.kind });
    this.adminTokens.set(jwt, { scope, expiresAt: Date.now() + this.options.adminTokenTtlMs });
    return { status: 200, body: { url: `${this.serverUrl()}/_actions/`, token: jwt } };
  }

  private admin(op: ActionsOperationName, args: string[], url: URL, body: unknown, scope: GitHubScope): SimResponse {
    const scaleSetId = Number(args[0]);
    switch (op) {
      case 'get-runner-group': {
        const group = this.scaleSets.groupNamed(url.searchParams.get('groupName') ?? '');
        return { status: 200, body: { count: group ? 1 : 0, value: group ? [group] : [] } };
      }
      case 'list-scale-sets': {
        const found = this.scaleSets.find(scope, Number(url.searchParams.get('runnerGroupId') ?? 1), url.searchParams.get('name') ?? '');
        return { status: 200, body: { count: found ? 1 : 0, value: found ? [this.scaleSets.json(found)] : [] } };
      }
      case 'create-scale-set': {
        if (!isRecord(body) || typeof body.name !== 'string' || !body.name) return actionsError(400, 'ArgumentException', 'name is required');
        const groupId = typeof body.runnerGroupId === 'number' ? body.runnerGroupId : 1;
        if (!this.scaleSets.groups.has(groupId)) return actionsError(404, 'RunnerGroupNotFoundException', `runner group ${groupId} not found`);
        if (this.scaleSets.find(scope, groupId, body.name)) return actionsError(409, 'RunnerScaleSetExistsException', `scale set ${body.name} already exists`);
        const labels = Array.isArray(body.labels) ? body.labels.filter(isRecord).map((l) => String(l.name)) : [];
        return { status: 200, body: this.scaleSets.json(this.scaleSets.create(scope, groupId, body.name, labels)) };
      }
      case 'get-scale-set': {
        const set = this.scaleSets.scaleSets.get(scaleSetId);
        return set ? { status: 200, body: this.scaleSets.json(set) } : actionsError(404, 'RunnerScaleSetNotFoundException', `scale set ${scaleSetId} not found`);
      }
      case 'update-scale-set': {
        const set = this.scaleSets.scaleSets.get(scaleSetId);
        if (!set) return actionsError(404, 'RunnerScaleSetNotFoundException', `scale set ${scaleSetId} not found`);
        if (!isRecord(body)) return actionsError(400, 'ArgumentException', 'a scale set is required');
        const groupId = typeof body.runnerGroupId === 'number' ? body.runnerGroupId : set.runnerGroupId;
        const name = typeof body.name === 'string' && body.name ? body.name : set.name;
        if (!this.scaleSets.groups.has(groupId)) return actionsError(404, 'RunnerGroupNotFoundException', `runner group ${groupId} not found`);
        const other = this.scaleSets.find(set.scope, groupId, name);
        if (other && other.id !== set.id) return actionsError(409, 'RunnerScaleSetExistsException', `scale set ${name} already exists`);
        // Labels are not taken: the service keeps those it made the scale set with, and answers with them.
        return { status: 200, body: this.scaleSets.json(this.scaleSets.update(set, groupId, name)) };
      }
      case 'get-acquirable-jobs': {
        if (!this.scaleSets.scaleSets.has(scaleSetId)) return actionsError(404, 'RunnerScaleSetNotFoundException', `scale set ${scaleSetId} not found`);
        const waiting = this.scaleSets.acquirable(scaleSetId);
        // Nothing waiting is a 204 with no body, as the service answers.
        return waiting.length === 0 ? { status: 204 } : { status: 200, body: { count: waiting.length, value: waiting } };
      }
      case 'delete-scale-set':
        return this.scaleSets.delete(scaleSetId, this.runnerRemoved) ? { status: 204 } : actionsError(404, 'RunnerScaleSetNotFoundException', `scale set ${scaleSetId} not found`);
      case 'create-session': {
        if (!this.scaleSets.scaleSets.has(scaleSetId)) return actionsError(404, 'RunnerScaleSetNotFoundException', `scale set ${scaleSetId} not found`);
        const owner = isRecord(body) && typeof body.ownerName === 'string' ? body.ownerName : '';
        const opened = this.faults.forRequest('session-conflict', op) ? 'conflict' : this.scaleSets.openSession(scaleSetId, owner, this.options.queueTokenTtlMs);
        if (opened === 'conflict') return actionsError(409, 'TaskAgentSessionConflictException', `The scale set ${scaleSetId} already has an active session.`);
        return { status: 200, body: this.sessionJson(opened.sessionId, scaleSetId) };
      }
      case 'refresh-session': {
        const session = this.scaleSets.session(scaleSetId, args[1] ?? '');
        if (!session) return actionsError(404, 'TaskAgentSessionExpiredException', `session ${args[1]} not found`);
        this.scaleSets.refreshSession(session, this.options.queueTokenTtlMs);
        return { status: 200, body: this.sessionJson(session.sessionId, scaleSetId) };
      }
      case 'delete-session':
        if (this.faults.forRequest('session-expired-on-delete', op)) {
          // As GitHub's service answers it (a .NET exception of another assembly than the others here).
          this.scaleSets.loseSession(scaleSetId);
          return {
            status: 400,
            body: {
              $id: '1',
              innerException: null,
              message: `The session identifier ${args[1]} is not valid.`,
              typeName: 'GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionExpiredException, GitHub.Actions.Runtime.WebApi',
              typeKey: 'RunnerScaleSetSessionExpiredException',
              errorCode: 0,
              eventId: 3000,
            },
          };
        }
        return this.scaleSets.closeSession(scaleSetId, args[1] ?? '') ? { status: 204 } : actionsError(404, 'TaskAgentSessionExpiredException', `session ${args[1]} not found`);
      case 'generate-scale-set-jitconfig':
        return this.generateJitConfig(scaleSetId, body);
      case 'get-agents': {
        const name = (url.searchParams.get('agentName') ?? '').toLowerCase();
        const found = [...this.state.runners.values()].filter((r) => r.scaleSetId !== undefined && r.name.toLowerCase() === name);
        return { status: 200, body: { count: found.length, value: found.map((r) => ({ id: r.id, name: r.name, runnerScaleSetId: r.scaleSetId })) } };
      }
      case 'remove-agent': {
        const runner = this.state.runners.get(scaleSetId);
        if (!runner || runner.scaleSetId === undefined) return actionsError(404, 'AgentNotFoundException', `agent ${scaleSetId} not found`);
        if (runner.busy) return actionsError(400, 'JobStillRunningException', `agent ${runner.name} is running a job`);
        this.state.runners.delete(runner.id);
        this.runnerRemoved(runner.id);
        return { status: 204 };
      }
      default:
        return actionsError(404, 'ResourceNotFoundException', op);
    }
  }

  private async queue(op: ActionsOperationName, args: string[], url: URL, req: IncomingMessage, body: unknown, bearer: string): Promise<SimResponse> {
    const scaleSetId = Number(args[0]);
    const holder = this.scaleSets.sessionByToken(bearer);
    if (!holder || holder.scaleSetId !== scaleSetId) {
      // Polling a session the service dropped is a 404; a stale token for a live session, 401.
      if (op !== 'acquire-jobs' && !this.scaleSets.session(scaleSetId, args[1] ?? '')) return actionsError(404, 'TaskAgentSessionExpiredException', 'The session has expired or was deleted.');
      return actionsError(401, 'UnauthorizedException', 'The message queue token is not valid.');
    }
    if (op === 'acquire-jobs') {
      if (!Array.isArray(body) || !body.every((id) => typeof id === 'number')) return actionsError(400, 'ArgumentException', 'a JSON array of request ids is required');
      const won = this.scaleSets.acquire(scaleSetId, body as number[]);
      return { status: 200, body: { count: won.length, value: won } };
    }
    if (holder.sessionId !== args[1]) return actionsError(404, 'TaskAgentSessionExpiredException', 'The session has expired or was deleted.');
    if (op === 'delete-message') {
      this.scaleSets.deleteMessage(scaleSetId, Number(args[2]));
      return { status: 204 };
    }
    return this.poll(scaleSetId, holder.sessionId, url, req);
  }

  private async poll(scaleSetId: number, sessionId: string, url: URL, req: IncomingMessage): Promise<SimResponse> {
    const capacity = req.headers['x-scalesetmaxcapacity'];
    if (capacity !== undefined) {
      const n = Number(capacity);
      if (!Number.isInteger(n) || n < 0) return actionsError(400, 'ArgumentException', 'X-ScaleSetMaxCapacity must be a non-negative integer');
      this.maxCapacity.set(scaleSetId, n);
    }
    const lastMessageId = Number(url.searchParams.get('lastMessageId') ?? 0) || 0;
    if (this.faults.forRequest('lose-session', 'get-message')) {
      this.scaleSets.loseSession(scaleSetId);
      return actionsError(404, 'TaskAgentSessionExpiredException', 'The session has expired or was deleted.');
    }
    if (this.faults.forRequest('redeliver-message', 'get-message')) {
      const again = this.scaleSets.redeliver(scaleSetId);
      if (again) return { status: 200, body: this.envelope(scaleSetId, again) };
    }
    const foreign = this.faults.forRequest('foreign-message', 'get-message');
    if (foreign) this.scaleSets.pushForeign(scaleSetId, foreign.messageType ?? 'RunnerScaleSetMaintenance');
    const closed = new AbortController();
    req.once('close', () => closed.abort());
    const deadline = Date.now() + this.options.longPollMs;
    for (;;) {
      const session = this.scaleSets.session(scaleSetId, sessionId);
      if (!session) return actionsError(404, 'TaskAgentSessionExpiredException', 'The session has expired or was deleted.');
      session.lastPollAt = Date.now();
      const message = this.scaleSets.nextMessage(scaleSetId, lastMessageId);
      if (message) {
        this.scaleSets.delivered(message);
        return { status: 200, body: this.envelope(scaleSetId, message) };
      }
      const left = deadline - Date.now();
      if (left <= 0 || closed.signal.aborted) return { status: 202 };
      await this.scaleSets.waitForMessage(scaleSetId, left, closed.signal);
    }
  }

  private envelope(scaleSetId: number, message: { messageId: number; foreignType?: string; jobs: unknown[] }): Record<string, unknown> {
    const { messageId, foreignType } = message;
    const body = foreignType === undefined ? JSON.stringify(message.jobs) : '{}';
    return { messageId, messageType: foreignType ?? JOB_MESSAGES_TYPE, body, statistics: this.scaleSets.statistics(scaleSetId) };
  }

  private sessionJson(sessionId: string, scaleSetId: number): RunnerScaleSetSession {
    const session = this.scaleSets.session(scaleSetId, sessionId)!;
    const set = this.scaleSets.scaleSets.get(scaleSetId)!;
    return {
      sessionId,
      ownerName: session.ownerName,
      runnerScaleSet: this.scaleSets.json(set),
      messageQueueUrl: `${this.serverUrl()}/_actions/_queues/${scaleSetId}/sessions/${sessionId}/messages`,
      messageQueueAccessToken: session.token,
      statistics: this.scaleSets.statistics(scaleSetId),
    };
  }

  private generateJitConfig(scaleSetId: number, body: unknown): SimResponse {
    const set = this.scaleSets.scaleSets.get(scaleSetId);
    if (!set) return actionsError(404, 'RunnerScaleSetNotFoundException', `scale set ${scaleSetId} not found`);
    if (!isRecord(body) || typeof body.name !== 'string' || !body.name) return actionsError(400, 'ArgumentException', 'name is required');
    const name = body.name;
    if ([...this.state.runners.values()].some((r) => r.name.toLowerCase() === name.toLowerCase() && r.scaleSetId !== undefined)) {
      return actionsError(409, 'AgentExistsException', `An agent with the name ${name} already exists.`);
    }
    const secret = randomToken();
    const runner = this.state.addRunner({
      name,
      scope: set.scope,
      labels: [set.name, ...set.labels],
      runnerGroupId: set.runnerGroupId,
      ephemeral: true,
      jitSecret: secret,
      scaleSetId,
    });
    const workFolder = typeof body.workFolder === 'string' && body.workFolder ? body.workFolder : '_work';
    return {
      status: 200,
      body: {
        runner: { id: runner.id, name: runner.name, runnerScaleSetId: scaleSetId },
        encodedJITConfig: encodeJitConfig({ runnerId: runner.id, runnerName: runner.name, secret, serverUrl: this.serverUrl(), workFolder }),
      },
    };
  }
}
