import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { containerStarts, handler } from '../../api/lambda';
import { lambdaEventToRequest, responseToLambdaResult, type LambdaHttpEvent } from '../../api/lambda-event';
import { mintInstanceToken } from '../../api/instance-token';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../../workflows/messages';
import { unmatchedJobsWorkflowId } from '../../workflows/pool-messages';
import { connectClient, eventually, instanceInput, uniqueName } from '../support/temporal';
import { signalsOf } from './history';

const ADMIN_TOKEN = 'lambda-admin-token-0123456789';
const WEBHOOK_SECRET = 'lambda-webhook-secret-0123';
const taskQueue = uniqueName('tq-lambda');

interface EventInput {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  cookies?: string[];
  body?: string;
  base64?: boolean;
}

/** An event shaped as API Gateway HTTP API (payload 2.0) delivers it: header names lower-case, body base64 when asked. */
function httpEvent(input: EventInput): LambdaHttpEvent & Record<string, unknown> {
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: input.path,
    rawQueryString: input.query ?? '',
    ...(input.cookies ? { cookies: input.cookies } : {}),
    headers: {
      'content-length': String(input.body ? Buffer.byteLength(input.body) : 0),
      host: 'abc123.execute-api.eu-west-1.amazonaws.com',
      'user-agent': 'GitHub-Hookshot/1a2b3c',
      'x-amzn-trace-id': 'Root=1-5e6722a7-cc56xmpl46db7ae02d4da47e',
      'x-forwarded-for': '140.82.115.1',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
      ...Object.fromEntries(Object.entries(input.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
    },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: { method: input.method, path: input.path, protocol: 'HTTP/1.1', sourceIp: '140.82.115.1', userAgent: 'GitHub-Hookshot/1a2b3c' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(input.body !== undefined ? { body: input.base64 ? Buffer.from(input.body, 'utf8').toString('base64') : input.body, isBase64Encoded: Boolean(input.base64) } : { isBase64Encoded: false }),
  };
}

const sign = (body: string): string => `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(Buffer.from(body, 'utf8')).digest('hex')}`;

function webhookEvent(event: string, body: string, options: { base64?: boolean; signature?: string } = {}): LambdaHttpEvent {
  return httpEvent({
    method: 'POST',
    path: '/webhooks/github',
    body,
    base64: options.base64,
    headers: {
      'Content-Type': 'application/json',
      'X-GitHub-Event': event,
      'X-GitHub-Delivery': randomUUID(),
      'X-Hub-Signature-256': options.signature ?? sign(body),
    },
  });
}

const admin = (method: string, path: string, body?: unknown) =>
  handler(httpEvent({ method, path, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) }));

const saved = { ...process.env };
beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-lambda-'));
  const configPath = join(dir, 'config.yaml');
  writeFileSync(
    configPath,
    [
      // Held by a server process; never in a container, which serves one request at a time.
      'api: { idleReportHold: 60s }',
      'providers:',
      `  - { type: fake, name: fake, stateDir: ${join(dir, 'machines')} }`,
      'github:',
      '  credentials:',
      '    - { name: default, auth: { type: pat, token: { env: LAMBDA_TEST_GITHUB_TOKEN } } }',
    ].join('\n'),
  );
  Object.assign(process.env, {
    RUNNERFLOW_CONFIG: configPath,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    RUNNERFLOW_TASK_QUEUE: taskQueue,
    RUNNERFLOW_ADMIN_TOKEN: ADMIN_TOKEN,
    RUNNERFLOW_WEBHOOK_SECRET: WEBHOOK_SECRET,
    RUNNERFLOW_INSTANCE_TOKEN_SECRET: 'lambda-instance-token-secret-0123456789',
    LAMBDA_TEST_GITHUB_TOKEN: 'ghp_lambdatestunused000000000000',
    RUNNERFLOW_LOG_LEVEL: 'error',
  });
});
afterAll(() => {
  process.env = saved;
});

describe('Lambda handler (HTTP API payload 2.0)', () => {
  it('answers health from Temporal, starting the app once per container', async () => {
    const first = await handler(httpEvent({ method: 'GET', path: '/healthz' }));
    expect(first.statusCode).toBe(200);
    expect(first.isBase64Encoded).toBe(false);
    expect(JSON.parse(first.body)).toEqual({ status: 'ok', temporal: { namespace: 'default' } });
    await Promise.all([1, 2, 3].map(() => handler(httpEvent({ method: 'GET', path: '/healthz' }))));
    expect(containerStarts()).toBe(1);
  });

  it('takes a correctly signed webhook with a base64 body, checked on the raw bytes', async () => {
    // Non-ASCII in the body: the signature covers GitHub's UTF-8 bytes, which must reach the check untouched.
    const body = JSON.stringify({ zen: 'Approachable is better than simple — ça va', hook_id: 1 });
    const res = await handler(webhookEvent('ping', body, { base64: true }));
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ result: 'pong' });
  });

  it('hands a signed queued job (plain body) over to Temporal', async () => {
    const jobId = Math.floor(Math.random() * 1e9);
    const body = JSON.stringify({
      action: 'queued',
      workflow_job: { id: jobId, run_id: 7, labels: ['self-hosted', 'nowhere'], status: 'queued', created_at: new Date().toISOString() },
      repository: { full_name: 'acme/app' },
    });
    const res = await handler(webhookEvent('workflow_job', body));
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ result: 'queued' });
    // No pool takes the labels: the job is recorded with the installation's unmatched jobs, in Temporal.
    const { client, connection } = await connectClient();
    try {
      const description = await client.workflow.getHandle(unmatchedJobsWorkflowId(taskQueue)).describe();
      expect(description.taskQueue).toBe(taskQueue);
    } finally {
      await connection.close();
    }
  });

  it('refuses a tampered webhook and one without a signature', async () => {
    const body = JSON.stringify({ zen: 'Keep it logically awesome.' });
    const tampered = webhookEvent('ping', body.replace('awesome', 'AWESOME'), { signature: sign(body), base64: true });
    const res = await handler(tampered);
    expect(res.statusCode).toBe(401);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'invalid_signature', message: 'X-Hub-Signature-256 does not match the body' } });

    const unsigned = httpEvent({ method: 'POST', path: '/webhooks/github', body, headers: { 'x-github-event': 'ping', 'x-github-delivery': randomUUID() } });
    expect((await handler(unsigned)).statusCode).toBe(401);
  });

  it('refuses /api/v1 without the admin token and with a wrong one', async () => {
    const missing = await handler(httpEvent({ method: 'GET', path: '/api/v1/pools' }));
    expect(missing.statusCode).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expect(JSON.parse(missing.body).error.code).toBe('unauthenticated');
    const wrong = await handler(httpEvent({ method: 'GET', path: '/api/v1/pools', headers: { Authorization: 'Bearer not-the-token' } }));
    expect(wrong.statusCode).toBe(403);
    expect(JSON.parse(wrong.body).error.code).toBe('forbidden');
  });

  it('answers 404 with the error shape for an unknown route', async () => {
    const res = await handler(httpEvent({ method: 'GET', path: '/no/such/route', query: 'a=1' }));
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'not_found' } });
  });

  it('creates a pool through the API route and lists it from Temporal visibility', async () => {
    const name = uniqueName('lambda-pool').toLowerCase().slice(0, 40);
    const pool = { name, github: { scope: { kind: 'repo', owner: 'acme', repo: 'app' } }, labels: ['self-hosted', 'lambda'], provider: 'fake', maxRunners: 2 };
    const created = await admin('POST', '/api/v1/pools', pool);
    expect(created.statusCode).toBe(201);
    expect(created.headers.location).toBe(`/api/v1/pools/${name}`);
    expect((await admin('POST', '/api/v1/pools', pool)).statusCode).toBe(409);
    const listed = await eventually(async () => {
      const res = await admin('GET', '/api/v1/pools');
      const pools = (JSON.parse(res.body) as { pools: Array<{ name: string }> }).pools;
      return pools.some((p) => p.name === name) ? res : undefined;
    }, 15_000, 'the pool in the list');
    expect(listed.statusCode).toBe(200);
    const { client, connection } = await connectClient();
    await client.workflow.getHandle(`pool/${name}`).terminate('test done').finally(() => connection.close());
  });

  it("signals an agent's idle report at once, whatever hold the config asks for", async () => {
    const { client, connection } = await connectClient();
    try {
      const name = uniqueName('inst');
      const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { workflowId: runnerWorkflowId(name), taskQueue, args: [instanceInput(name)] });
      const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, 'lambda-instance-token-secret-0123456789', 60_000);
      const started = Date.now();
      const res = await handler(httpEvent({ method: 'POST', path: '/api/v1/callbacks/status', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ status: 'idle' }) }));
      expect(res.statusCode).toBe(202);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(await signalsOf(client, runnerWorkflowId(name), handle.firstExecutionRunId)).toEqual([{ name: 'runnerStatus', input: { status: 'idle' } }]);
      await handle.terminate('test done');
    } finally {
      await connection.close();
    }
  });

  it('answers 400 to an event that is not an HTTP event', async () => {
    const res = await handler({ source: 'aws.events' } as unknown as LambdaHttpEvent);
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body).error.code).toBe('bad_request');
  });
});

describe('Lambda event conversion', () => {
  it('joins the cookies array into one Cookie header and keeps comma-joined repeated headers', () => {
    const request = lambdaEventToRequest(
      httpEvent({ method: 'GET', path: '/x', query: 'a=1&a=2', cookies: ['session=abc', 'theme=dark'], headers: { accept: 'text/html, application/json' } }),
    );
    expect(request.headers.get('cookie')).toBe('session=abc; theme=dark');
    expect(request.headers.get('accept')).toBe('text/html, application/json');
    expect(new URL(request.url).searchParams.getAll('a')).toEqual(['1', '2']);
    expect(request.url.startsWith('https://abc123.execute-api.eu-west-1.amazonaws.com/x?')).toBe(true);
  });

  it('returns Set-Cookie as the cookies array and binary bodies as base64', async () => {
    const headers = new Headers({ 'content-type': 'application/octet-stream' });
    headers.append('set-cookie', 'a=1; HttpOnly');
    headers.append('set-cookie', 'b=2; Secure');
    const result = await responseToLambdaResult(new Response(new Uint8Array([0, 255, 1]), { status: 200, headers }));
    expect(result.cookies).toEqual(['a=1; HttpOnly', 'b=2; Secure']);
    expect(result.headers['set-cookie']).toBeUndefined();
    expect(result).toMatchObject({ isBase64Encoded: true, body: Buffer.from([0, 255, 1]).toString('base64') });
  });
});
