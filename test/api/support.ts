/**
 * An app wired to the test Temporal server, with a GitHub double and a log
 * that tests can read.
 */
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect } from 'vitest';
import { createApp, type App } from '../../api/app';
import type { AppDeps, AppLimits, Logger } from '../../api/deps';
import { parseConfig } from '../../config/load';
import type { GitHubPort } from '../../github/port';
import { GitHubDouble } from '../support/github-double';
import { connectClient, startTestWorker, type TestWorker } from '../support/temporal';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const WEBHOOK_SECRET = 'test-webhook-secret';
export const INSTANCE_TOKEN_KEY = 'test-instance-token-key-0123456789';

/**
 * An agent's `idle` callback is signalled at once here (api.idleReportHold 0): these tests
 * check what a callback does to its workflow, and the hold has tests of its own.
 */
export const testConfig = (taskQueue: string, provider = 'fake', idleReportHoldMs = 0) =>
  parseConfig({
    temporal: { taskQueue },
    api: { idleReportHold: idleReportHoldMs },
    providers: [{ type: 'fake', name: provider, stateDir: '/tmp/runnerflow-api-test-unused' }],
    github: { credentials: [{ name: 'default', auth: { type: 'pat', token: { env: 'RUNNERFLOW_TEST_UNUSED_TOKEN' } } }] },
  });

export interface LogEntry {
  level: string;
  message: string;
  meta?: Record<string, unknown>;
}

export function recordingLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) => entries.push({ level, message, meta });
  return { entries, info: at('info'), warn: at('warn'), error: at('error') };
}

export interface TestApp {
  app: App;
  logger: ReturnType<typeof recordingLogger>;
  github: GitHubDouble;
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
}

export interface CallOptions {
  body?: unknown;
  /** Raw body text; wins over `body`. */
  raw?: string;
  /** Bearer token; the admin token unless null. */
  token?: string | null;
  headers?: Record<string, string>;
}

export function testApp(
  client: Client,
  taskQueue: string,
  options: { github?: GitHubPort; limits?: Partial<AppLimits>; adminToken?: string; logger?: Logger; idleReportHoldMs?: number } = {},
): TestApp {
  const logger = recordingLogger();
  const log: Logger = options.logger ?? logger;
  const github = new GitHubDouble();
  const deps: AppDeps = {
    client,
    taskQueue,
    config: testConfig(taskQueue, 'fake', options.idleReportHoldMs),
    github: { get: () => options.github ?? github },
    secrets: { adminToken: options.adminToken ?? ADMIN_TOKEN, webhookSecret: WEBHOOK_SECRET, instanceTokenKey: INSTANCE_TOKEN_KEY },
    logger: log,
    limits: { queryTimeoutMs: 3_000, poolCacheMs: 0, ...options.limits },
  };
  const app = createApp(deps);
  return {
    app,
    logger,
    github,
    call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      let body: string | undefined;
      if (opts.raw !== undefined) body = opts.raw;
      else if (opts.body !== undefined) body = JSON.stringify(opts.body);
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      return app(new Request(`http://127.0.0.1${path}`, { method, headers, body }));
    },
  };
}

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

/** Asserts the error shape and that nothing of a stack trace leaks; returns the error. */
export async function expectError(response: Response, status: number, code?: string): Promise<ErrorBody['error']> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  const body = JSON.parse(text) as ErrorBody;
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  if (code) expect(body.error.code).toBe(code);
  expect(text).not.toMatch(/\n\s+at |\.ts:\d+|node_modules/);
  return body.error;
}

export function validPool(name: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'acme', repo: 'widgets' } },
    labels: ['linux', name],
    provider: 'fake',
    maxRunners: 3,
    ...overrides,
  };
}

export interface WorkerAndApi {
  client: Client;
  worker: TestWorker;
  api: TestApp;
}

/**
 * A file's worker on a task queue of its own and the API over it, sharing the worker's GitHub
 * double; the fields are set before the file's first test, and all is stopped after its last.
 */
export function useWorkerAndApi(options: { limits?: Partial<AppLimits> } = {}): WorkerAndApi {
  const env = {} as WorkerAndApi;
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ connection, client: env.client } = await connectClient());
    env.worker = await startTestWorker();
    env.api = testApp(env.client, env.worker.taskQueue, { github: env.worker.github, ...(options.limits ? { limits: options.limits } : {}) });
  });
  afterAll(async () => {
    await env.worker?.stop();
    await connection?.close();
  });
  return env;
}
