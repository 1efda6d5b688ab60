/**
 * A stateful GitHub simulator on a real HTTP server (loopback only): runner
 * REST endpoints for repo, org and enterprise scopes, simulated runner agents,
 * signed `workflow_job` webhooks and fault injection. Give `url` to Octokit as
 * its baseUrl (`url + '/api/v3'` works too, as on GitHub Enterprise Server).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GitHubScope } from '../port';
import { isActionsPath } from './actions-routes';
import { SimActionsService } from './actions-service';
import { SimAgents, type AgentState, type SimAgent, type StartAgentInput } from './agents';
import { handleControl } from './control-api';
import { SimCredentials } from './credentials';
import { FaultPlan, type SimFault } from './faults';
import { githubError, matchRoute, SimGitHubApi } from './github-api';
import { BadRequest, readJsonBody, sleep, writeResponse, type SimResponse } from './http-util';
import { RateLimitWindow, rateLimitHeaders, rateLimitOverview } from './rate-limit';
import { SimScaleSets, type ScaleSetAssignment, type ScaleSetView } from './scale-sets';
import { operationKey, type OperationName } from './served-operations';
import { SimState, type QueueJobInput, type SimJob } from './sim-state';
import { WebhookSender, type SentDelivery, type WebhookStats, type WebhookTarget } from './webhook-sender';
import { workflowJobPayload } from './workflow-job-payload';

export interface GitHubSimulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  webhookUrl?: string;
  webhookSecret?: string;
  /** How long a simulated job runs unless queued with its own duration. */
  jobDurationMs?: number;
  /** Primary rate limit per hour for the simulated token. */
  rateLimit?: number;
  /** Webhook deliveries in flight at once (events of one job stay in order); 1 by default. */
  webhookConcurrency?: number;
  /** Keep every API answer for schema checks (tests). */
  recordResponses?: boolean;
  /** Where delivery and callback failures are reported; console.warn by default. */
  onError?: (message: string) => void;
  /** Actions service: how long a message poll waits before answering 202 (50 s by default, as GitHub's). */
  longPollMs?: number;
  /** Actions service: a session not polled for this long stops blocking a new one (2 minutes by default). */
  sessionIdleTimeoutMs?: number;
  /** Actions service: lifetime of admin and queue tokens (1 hour by default). */
  actionsTokenTtlMs?: number;
}

export interface ServedResponse {
  operation: OperationName;
  /** `METHOD /path/{template}`, the key of github/simulator/openapi-subset.json. */
  key: string;
  status: number;
  body: unknown;
}

export interface SimulatorStats {
  /** API calls received per `METHOD /path/{template}`, faults included. */
  calls: Record<string, number>;
  callsByOperation: Partial<Record<OperationName, number>>;
  totalApiCalls: number;
  /** Calls that arrived while a primary rate limit was in force (a client that respects reset sends none). */
  callsDuringPrimaryRateLimit: number;
  webhooks: WebhookStats;
  jobs: { queued: number; inProgress: number; completed: number };
  runners: number;
  agents: number;
  /** Actions-service (scale set) calls per operation; long polls are `get-message`. */
  actionsCalls: Record<string, number>;
}

export interface GitHubSimulator {
  /** API base URL for Octokit. */
  url: string;
  /** Base of the `/_sim` control endpoints. */
  controlUrl: string;
  queueJob(input: QueueJobInput): SimJob;
  /** Cancels a queued job (it completes with no runner); false when not queued. */
  cancelJob(jobId: number): boolean;
  startAgent(input: StartAgentInput): Promise<SimAgent>;
  waitForAgent(id: string, timeoutMs: number): Promise<AgentState | undefined>;
  stopAgent(id: string): boolean;
  /** The agent's machine died silently: runner offline, its job kept busy until `failJobAfterMs` (then it fails). */
  crashAgent(id: string, options?: { failJobAfterMs?: number }): boolean;
  agents(): SimAgent[];
  setFault(fault: SimFault): void;
  clearFaults(): void;
  setWebhook(target: WebhookTarget): void;
  stats(): SimulatorStats;
  /** Registered runners as GitHub's API shows them, with their scope (and scale set, for a scale set's runners). */
  runners(): Record<string, unknown>[];
  jobs(): SimJob[];
  deliveries(): SentDelivery[];
  servedResponses(): ServedResponse[];
  /** Redelivers every failed webhook delivery (GitHub's "redeliver"); returns how many. */
  redeliverFailedWebhooks(): number;
  /** Resolves once every webhook so far has been delivered (or failed). */
  webhooksIdle(): Promise<void>;
  /** Scale sets with their session, statistics and queue. */
  scaleSets(): ScaleSetView[];
  /** The X-ScaleSetMaxCapacity last sent by a scale set's listener. */
  scaleSetMaxCapacity(scaleSetId: number): number | undefined;
  /** Adds a runner group (GitHub has `Default`, id 1); returns its id. */
  addRunnerGroup(name: string): number;
  /** A scale set made as another tool would make it, with exactly these labels, in the `Default` group; returns its id. */
  addScaleSet(scope: GitHubScope, name: string, labels: string[]): number;
  /** Deletes a scale set as its owner would (its session ends, its runners are unregistered); false when there was none. */
  deleteScaleSet(scaleSetId: number): boolean;
  /** How jobs reach scale sets from now on: offered to acquire (the default), or assigned by the broker. */
  setScaleSetAssignment(mode: ScaleSetAssignment): void;
  /** A token refused from now on (`401 Bad credentials`), as an expired or revoked one is. */
  revokeToken(token: string): void;
  /** The App's private keys from now on, as PEM public keys: a JWT none of them signed gets no installation token. */
  setAppKeys(publicKeysPem: readonly string[] | undefined): void;
  close(): Promise<void>;
}

const requestId = (): string =>
  [2, 2, 3, 3, 4].map((n) => randomBytes(n).toString('hex').toUpperCase()).join(':');

export async function startGitHubSimulator(options: GitHubSimulatorOptions = {}): Promise<GitHubSimulator> {
  const onError = options.onError ?? ((m: string) => console.warn(`[github-simulator] ${m}`));
  const state = new SimState();
  const faults = new FaultPlan();
  const credentials = new SimCredentials();
  const webhooks = new WebhookSender({ url: options.webhookUrl, secret: options.webhookSecret }, faults, onError, options.webhookConcurrency ?? 1);
  const agents = new SimAgents(state, webhooks, onError);
  const window = new RateLimitWindow(options.rateLimit ?? 5000);
  const jobDurationMs = options.jobDurationMs ?? 1000;
  const calls: Record<string, number> = {};
  const callsByOperation: Partial<Record<OperationName, number>> = {};
  const served: ServedResponse[] = [];
  let callsDuringPrimaryRateLimit = 0;
  let baseUrl = '';
  const api = new SimGitHubApi(state, agents, () => baseUrl, webhooks);
  const scaleSets = new SimScaleSets(
    state,
    { sessionIdleTimeoutMs: options.sessionIdleTimeoutMs ?? 120_000 },
    () => agents.dispatch(),
    () => baseUrl,
    () => faults.forRequest('lose-job-offer', 'get-message') !== undefined,
  );
  agents.jobEvents = {
    started: (job, runner) => scaleSets.jobStarted(job, runner),
    completed: (job, runner, result) => scaleSets.jobCompleted(job, runner, result),
  };
  const tokenTtl = options.actionsTokenTtlMs ?? 3_600_000;
  const actions = new SimActionsService(
    state,
    scaleSets,
    faults,
    { longPollMs: options.longPollMs ?? 50_000, adminTokenTtlMs: tokenTtl, queueTokenTtlMs: tokenTtl },
    () => baseUrl,
    (runnerId) => agents.runnerRemoved(runnerId),
  );
  const actionsCalls: Record<string, number> = {};

  async function answerActions(req: IncomingMessage, url: URL, path: string): Promise<SimResponse> {
    const method = req.method ?? 'GET';
    const op = actions.operationOf(method, path) ?? 'unknown';
    actionsCalls[op] = (actionsCalls[op] ?? 0) + 1;
    const body = method === 'GET' || method === 'DELETE' ? {} : await readJsonBody(req);
    const answer = await actions.handle(req, url, path, body);
    if (options.recordResponses) served.push({ operation: op as OperationName, key: `ACTIONS ${op}`, status: answer.status, body: answer.body });
    return answer;
  }

  async function answerApi(req: IncomingMessage, url: URL, path: string): Promise<{ answer: SimResponse; key?: string; op?: OperationName }> {
    const method = req.method ?? 'GET';
    const route = matchRoute(method, path);
    if (!route || route === 'method_not_allowed') return { answer: githubError(404, 'Not Found', 'https://docs.github.com/rest') };
    const key = operationKey(route.op);
    calls[key] = (calls[key] ?? 0) + 1;
    callsByOperation[route.op.name] = (callsByOperation[route.op.name] ?? 0) + 1;
    const body = method === 'GET' || method === 'DELETE' ? {} : await readJsonBody(req);
    if (!req.headers.authorization) return { answer: githubError(401, 'Requires authentication', 'https://docs.github.com/rest'), key, op: route.op.name };
    const refused = credentials.refusal(req.headers.authorization, route.op.name);
    if (refused) return { answer: refused, key, op: route.op.name };

    const latency = faults.forRequest('latency', route.op.name);
    if (latency) await sleep(latency.ms);
    const primary = faults.forRequest('primary-rate-limit', route.op.name);
    if (primary) {
      callsDuringPrimaryRateLimit += 1;
      const snap = window.snapshot();
      return {
        answer: {
          ...githubError(primary.status ?? 403, 'API rate limit exceeded for installation ID 1.', 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api'),
          headers: rateLimitHeaders({ ...snap, remaining: 0, used: snap.limit, resetEpochSeconds: primary.resetAtEpochSeconds ?? snap.resetEpochSeconds }),
        },
        key,
        op: route.op.name,
      };
    }
    const secondary = faults.forRequest('secondary-rate-limit', route.op.name);
    if (secondary) {
      const retryAfter = secondary.retryAfterSeconds === undefined ? 60 : secondary.retryAfterSeconds;
      const answer = githubError(
        secondary.status ?? 403,
        'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
        'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
      );
      return { answer: { ...answer, headers: retryAfter === null ? {} : { 'retry-after': String(retryAfter) } }, key, op: route.op.name };
    }
    const serverError = faults.forRequest('server-error', route.op.name);
    if (serverError) return { answer: githubError(serverError.status ?? 502, 'Server Error', 'https://docs.github.com/rest'), key, op: route.op.name };
    const { owner, repo } = route.params;
    if (owner && repo && faults.repositoryUnreadable(owner, repo)) return { answer: githubError(404, 'Not Found', 'https://docs.github.com/rest'), key, op: route.op.name };
    // GitHub does not count a look at the rate limit against it.
    if (route.op.name === 'rate-limit') return { answer: { status: 200, body: rateLimitOverview(window.snapshot()) }, key, op: route.op.name };
    if (!window.take()) {
      callsDuringPrimaryRateLimit += 1;
      return { answer: githubError(403, 'API rate limit exceeded for installation ID 1.', 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api'), key, op: route.op.name };
    }
    return { answer: api.handle({ op: route.op, params: route.params, query: url.searchParams, body, url }), key, op: route.op.name };
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', baseUrl);
    const path = url.pathname.replace(/^\/api\/v3(?=\/)/, '').replace(/\/+$/, '') || '/';
    try {
      if (path === '/_sim' || path.startsWith('/_sim/')) {
        const body = req.method === 'POST' || req.method === 'PUT' ? await readJsonBody(req) : undefined;
        writeResponse(res, await handleControl(sim, req.method ?? 'GET', path, url.searchParams, body));
        return;
      }
      if (isActionsPath(path)) {
        writeResponse(res, await answerActions(req, url, path));
        return;
      }
      const { answer, key, op } = await answerApi(req, url, path);
      const headers: Record<string, string> = {
        ...rateLimitHeaders(window.snapshot()),
        'x-github-request-id': requestId(),
        'x-github-api-version-selected': '2022-11-28',
        'x-github-media-type': 'github.v3; format=json',
        ...answer.headers,
      };
      if (options.recordResponses && key && op) served.push({ operation: op, key, status: answer.status, body: answer.body });
      writeResponse(res, { ...answer, headers });
    } catch (err) {
      if (err instanceof BadRequest) writeResponse(res, githubError(400, err.message, 'https://docs.github.com/rest'));
      else {
        onError(`request ${req.method} ${path} failed: ${(err as Error).stack ?? String(err)}`);
        writeResponse(res, githubError(500, 'Server Error', 'https://docs.github.com/rest'));
      }
    }
  }

  const server = createServer((req, res) => void onRequest(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const sim: GitHubSimulator = {
    url: baseUrl,
    controlUrl: `${baseUrl}/_sim`,
    queueJob(input) {
      const job = state.queueJob(input, jobDurationMs);
      webhooks.send('workflow_job', workflowJobPayload('queued', job));
      scaleSets.offer(job);
      agents.dispatch();
      return job;
    },
    cancelJob(jobId) {
      const job = state.jobs.get(jobId);
      if (!job || job.status !== 'queued') return false;
      agents.cancelQueued(job);
      return true;
    },
    startAgent: (input) => agents.start(input),
    waitForAgent: (id, timeoutMs) => agents.waitUntilDone(id, timeoutMs),
    stopAgent: (id) => agents.stop(id),
    crashAgent: (id, crashOptions) => agents.crash(id, crashOptions),
    agents: () => agents.list(),
    setFault: (fault) => faults.add(fault),
    clearFaults: () => faults.clear(),
    setWebhook(target) {
      webhooks.target = { ...webhooks.target, ...target };
    },
    stats() {
      const jobs = [...state.jobs.values()];
      return {
        calls: { ...calls },
        callsByOperation: { ...callsByOperation },
        totalApiCalls: Object.values(calls).reduce((a, b) => a + b, 0),
        callsDuringPrimaryRateLimit,
        webhooks: { ...webhooks.stats },
        jobs: {
          queued: jobs.filter((j) => j.status === 'queued').length,
          inProgress: jobs.filter((j) => j.status === 'in_progress').length,
          completed: jobs.filter((j) => j.status === 'completed').length,
        },
        runners: state.runners.size,
        agents: agents.list().filter((a) => a.state !== 'done').length,
        actionsCalls: { ...actionsCalls },
      };
    },
    runners: () => [...state.runners.values()].map((r) => ({ ...state.runnerJson(r), scope: r.scope, ...(r.scaleSetId !== undefined ? { scaleSetId: r.scaleSetId } : {}) })),
    jobs: () => [...state.jobs.values()].map((j) => ({ ...j })),
    deliveries: () => [...webhooks.log],
    servedResponses: () => [...served],
    redeliverFailedWebhooks: () => webhooks.redeliverFailed(),
    webhooksIdle: () => webhooks.idle(),
    scaleSets: () => scaleSets.view(),
    scaleSetMaxCapacity: (id) => actions.maxCapacity.get(id),
    addRunnerGroup: (name) => scaleSets.addGroup(name),
    addScaleSet: (scope, name, labels) => scaleSets.create(scope, 1, name, labels).id,
    deleteScaleSet: (scaleSetId) => scaleSets.delete(scaleSetId, (runnerId) => agents.runnerRemoved(runnerId)),
    setScaleSetAssignment: (mode) => scaleSets.setAssignment(mode),
    revokeToken: (token) => credentials.revokeToken(token),
    setAppKeys: (keys) => credentials.setAppKeys(keys),
    async close() {
      agents.close();
      await webhooks.idle();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return sim;
}
