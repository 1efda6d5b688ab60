import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes, createApp } from '../../api/app';
import { connectClient, uniqueName } from '../support/temporal';
import { expectError, recordingLogger, testApp, testConfig, validPool, type TestApp } from './support';

let connection: Connection;
let client: Client;
let api: TestApp;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  api = testApp(client, uniqueName('api-surface'), { limits: { apiBodyBytes: 2048 } });
});

afterAll(async () => {
  await connection.close();
});

describe('routing', () => {
  it('answers an unknown route with 404 in the error shape', async () => {
    const error = await expectError(await api.call('GET', '/api/v1/nope'), 404, 'not_found');
    expect(error.message).toContain('/api/v1/nope');
  });

  it('takes trailing slashes off a path, and repeats no more than the start of a long unknown one', async () => {
    const response = await api.call('PATCH', '/api/v1/pools///');
    expect(response.headers.get('allow')).toBe('GET, POST');
    // A path of slashes is where a pattern for trailing slashes would backtrack on every one.
    const slashes = `${'/'.repeat(16_000)}x`;
    const error = await expectError(await api.call('GET', slashes, { token: null }), 404, 'not_found');
    expect(error.message.length).toBeLessThan(300);
    expect(error.message).toContain('(16001 characters)');
  });

  it('quotes at most the start of a very long value it refuses, and says how long it was', async () => {
    const name = `p${'x'.repeat(20_000)}`;
    const error = await expectError(await api.call('GET', `/api/v1/pools/${name}`), 404, 'not_found');
    expect(error.message.length).toBeLessThan(2_100);
    expect(error.message).toMatch(/^pool pxxx.*… \(20021 characters in all\)$/);
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const response = await api.call('PATCH', '/api/v1/pools');
    expect(response.headers.get('allow')).toBe('GET, POST');
    await expectError(response, 405, 'method_not_allowed');
    const onItem = await api.call('POST', '/api/v1/runners/some-runner');
    expect(onItem.headers.get('allow')).toBe('GET, DELETE');
    await expectError(onItem, 405);
  });
});

describe('admin authentication', () => {
  it('answers a request without a token with 401 and WWW-Authenticate', async () => {
    const response = await api.call('GET', '/api/v1/pools', { token: null });
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    const error = await expectError(response, 401, 'unauthenticated');
    expect(error.message).toMatch(/missing bearer token/);
  });

  it('answers a malformed Authorization header with 401', async () => {
    const response = await api.call('GET', '/api/v1/runners', { token: null, headers: { authorization: 'Basic YWRtaW46eA==' } });
    await expectError(response, 401, 'unauthenticated');
  });

  it('answers a wrong token with 403 saying so', async () => {
    const error = await expectError(await api.call('GET', '/api/v1/pools', { token: 'not-the-admin-token' }), 403, 'forbidden');
    expect(error.message).toMatch(/not the admin token/);
  });

  it('refuses every token when no admin token is configured', async () => {
    const locked = testApp(client, uniqueName('locked'), { adminToken: '' });
    const error = await expectError(await locked.call('GET', '/api/v1/pools', { token: 'anything' }), 403, 'forbidden');
    expect(error.message).toMatch(/no admin token is configured/);
  });

  it('protects every /api/v1 route except the instance callback', async () => {
    for (const route of apiRoutes().filter((r) => r.path.startsWith('/api/v1/'))) {
      const path = route.path.replace(':name', 'x');
      const response = await api.call(route.method, path, { token: null, ...(route.method === 'GET' ? {} : { body: {} }) });
      if (route.path === '/api/v1/callbacks/status') {
        const error = await expectError(response, 401);
        expect(error.message).toMatch(/instance token/);
      } else {
        await expectError(response, 401, 'unauthenticated');
      }
    }
  });
});

describe('request bodies', () => {
  it('answers invalid JSON with 400', async () => {
    const error = await expectError(await api.call('POST', '/api/v1/pools', { raw: '{"name": "a",' }), 400, 'invalid_json');
    expect(error.message).toMatch(/not valid JSON/);
  });

  it('answers an empty body with 400', async () => {
    await expectError(await api.call('POST', '/api/v1/pools', { raw: '' }), 400, 'bad_request');
  });

  it('lists each invalid field with its path', async () => {
    const response = await api.call('POST', '/api/v1/pools', {
      body: { name: 'Bad Name', github: { scope: { kind: 'repo', owner: 'acme' } }, labels: [], provider: 'fake', surprise: 1 },
    });
    const error = await expectError(response, 400, 'validation_failed');
    const paths = (error.details as { path: string; message: string }[]).map((d) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['name', 'github.scope.repo', 'labels', '(root)']));
    expect(error.message).toContain('github.scope.repo');
  });

  it('refuses a pool naming an unconfigured provider or credentials', async () => {
    const response = await api.call('POST', '/api/v1/pools', {
      body: validPool(uniqueName('p'), { provider: 'nowhere', github: { credentials: 'other', scope: { kind: 'org', org: 'acme' } } }),
    });
    const error = await expectError(response, 400, 'validation_failed');
    expect(error.details).toEqual([
      { path: 'provider', message: expect.stringContaining('"nowhere"') },
      { path: 'github.credentials', message: expect.stringContaining('"other"') },
    ]);
  });

  it('answers a body over the limit with 413, by Content-Length', async () => {
    const error = await expectError(await api.call('POST', '/api/v1/pools', { raw: JSON.stringify({ pad: 'x'.repeat(4096) }) }), 413, 'payload_too_large');
    expect(error.message).toContain('2048');
  });

  it('answers a streamed body over the limit with 413, without Content-Length', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 10) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const request = new Request('http://127.0.0.1/api/v1/pools', {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token-0123456789', 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(request.headers.get('content-length')).toBeNull();
    await expectError(await api.app(request), 413, 'payload_too_large');
    expect(sent).toBeLessThan(10);
  });
});

describe('query validation', () => {
  it('names an unknown runner status', async () => {
    const error = await expectError(await api.call('GET', '/api/v1/runners?status=sleeping'), 400, 'validation_failed');
    expect(error.message).toContain('"sleeping"');
    expect(error.details).toEqual([{ path: 'query.status', message: expect.stringContaining('pending_create') }]);
  });

  it('names a pool filter that is no pool name, without asking Temporal', async () => {
    // A NUL would cut the visibility query short; the server then fails it as unavailable.
    for (const pool of ['%00', 'a%00b', 'Bad%20Name']) {
      const error = await expectError(await api.call('GET', `/api/v1/runners?pool=${pool}`), 400, 'validation_failed');
      expect(error.details).toEqual([{ path: 'query.pool', message: expect.stringContaining('lowercase letters, digits and dashes') }]);
    }
  });

  it('refuses a parameter given twice or given empty, rather than guess', async () => {
    const twice = await expectError(await api.call('GET', '/api/v1/runners?limit=1&limit=x'), 400, 'validation_failed');
    expect(twice.details).toEqual([{ path: 'query.limit', message: 'given 2 times; give it once' }]);
    const empty = await expectError(await api.call('GET', '/api/v1/runners?limit='), 400, 'validation_failed');
    expect(empty.message).toBe('invalid query: query.limit: is empty; give a value or leave it out');
  });

  it('takes a count only in digits', async () => {
    for (const limit of ['0x10', '1e3', '-1', '1.5']) {
      const error = await expectError(await api.call('GET', `/api/v1/runners?limit=${limit}`), 400, 'validation_failed');
      expect(error.details).toEqual([{ path: 'query.limit', message: 'must be a whole number written in digits' }]);
    }
    const tooMany = await expectError(await api.call('GET', '/api/v1/sweeps?runs=21'), 400, 'validation_failed');
    expect(tooMany.details).toEqual([{ path: 'query.runs', message: expect.stringContaining('20') }]);
    expect((await api.call('GET', '/api/v1/runners?limit=3')).status).toBe(200);
  });

  it('answers a PUT to a name no pool can have as GET does, not as a bad body', async () => {
    const error = await expectError(await api.call('PUT', '/api/v1/pools/Bad%20Name', { body: { labels: ['x'] } }), 404, 'not_found');
    expect(error.message).toBe('pool Bad Name does not exist');
  });

  it('refuses bypassBusy without force', async () => {
    const error = await expectError(await api.call('DELETE', '/api/v1/runners/r1?bypassBusy=true'), 400);
    expect(error.message).toMatch(/only with force=true/);
  });
});

describe('unexpected failures', () => {
  it('answer 500 with a generic message and log the detail', async () => {
    const logger = recordingLogger();
    const broken = {
      options: { namespace: 'default' },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
      workflow: {
        list: () => {
          throw new TypeError('secret internal detail at /srv/app.ts:12');
        },
      },
    } as unknown as Client;
    const app = createApp({
      client: broken,
      taskQueue: 'unused',
      config: testConfig('unused'),
      github: { get: () => api.github },
      secrets: { adminToken: 't0k3n-for-this-test', instanceTokenKey: 'k'.repeat(32) },
      logger,
    });
    const response = await app(new Request('http://127.0.0.1/api/v1/pools', { headers: { authorization: 'Bearer t0k3n-for-this-test' } }));
    const error = await expectError(response, 500, 'internal');
    expect(error.message).not.toContain('secret internal detail');
    expect(error.message).toMatch(/^internal server error \(request id [0-9a-f-]{36}\)$/);
    const logged = logger.entries.find((e) => e.level === 'error');
    expect(logged?.meta?.error).toContain('secret internal detail');
    expect(logged?.meta?.stack).toContain('TypeError');
    expect(logged?.meta?.requestId).toBe((error.details as { requestId: string }).requestId);
  });
});

describe('open routes', () => {
  it('serves /healthz without a token when Temporal answers', async () => {
    const response = await api.call('GET', '/healthz', { token: null });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', temporal: { namespace: 'default' } });
  });

  it('answers list routes within the query deadline when Temporal is unreachable, as the others', async () => {
    const unreachable = testApp(new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), 'unused', { limits: { queryTimeoutMs: 1_000 } });
    for (const path of ['/api/v1/pools', '/api/v1/runners', '/api/v1/summary', '/api/v1/pools/x']) {
      const started = Date.now();
      const response = await unreachable.call('GET', path);
      expect(Date.now() - started, path).toBeLessThan(4_000);
      expect([503, 504], path).toContain(response.status);
      const error = await expectError(response, response.status);
      expect(error.message, path).toMatch(/^Temporal (is not reachable|did not answer in time: the Temporal server is down or slow, or no runnerflow worker polls task queue "unused")$/);
    }
  });

  it('answers /healthz with 503 when Temporal is unreachable', async () => {
    const unreachable = testApp(new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), 'unused');
    const error = await expectError(await unreachable.call('GET', '/healthz', { token: null }), 503, 'temporal_unavailable');
    expect(error.message).toContain('default');
  });

  it('serves Prometheus metrics from the shared registry', async () => {
    const response = await api.call('GET', '/metrics', { token: null });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toContain('# TYPE runnerflow_webhook_deliveries_total counter');
    expect(text).toContain('runnerflow_process_');
  });

  it('documents every route in /openapi.json', async () => {
    const response = await api.call('GET', '/openapi.json', { token: null });
    expect(response.status).toBe(200);
    const doc = (await response.json()) as { openapi: string; paths: Record<string, Record<string, { security: unknown[]; requestBody?: unknown; parameters: { name: string; in: string }[] }>> };
    expect(doc.openapi).toBe('3.1.0');
    const routes = apiRoutes();
    expect(routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      [
        'POST /webhooks/github',
        'GET /api/v1/pools',
        'POST /api/v1/pools',
        'GET /api/v1/pools/:name',
        'PUT /api/v1/pools/:name',
        'DELETE /api/v1/pools/:name',
        'GET /api/v1/jobs/unmatched',
        'GET /api/v1/jobs/route',
        'GET /api/v1/jobs/:id',
        'GET /api/v1/runners',
        'GET /api/v1/runners/:name',
        'DELETE /api/v1/runners/:name',
        'POST /api/v1/callbacks/status',
        'GET /api/v1/metadata/runner-registration-token/',
        'GET /api/v1/metadata/credentials/:file',
        'GET /api/v1/metadata/runner-registration-token',
        'GET /healthz',
        'GET /metrics',
        'GET /openapi.json',
        'GET /api/v1/status',
        'GET /api/v1/summary',
        'GET /api/v1/liveness',
        'GET /api/v1/redeliveries',
        'GET /api/v1/sweeps',
        'POST /api/v1/sweeps/:provider',
        'GET /ui',
        'GET /ui/:file',
      ].sort(),
    );
    for (const route of routes) {
      const op = doc.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      if (route.auth === 'admin') expect(op!.security).toEqual([{ adminToken: [] }]);
    }
    const documented = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    expect(documented).toBe(routes.length);
    const create = doc.paths['/api/v1/pools']!.post!;
    const schema = (create.requestBody as { content: { 'application/json': { schema: { required: string[]; properties: Record<string, unknown> } } } }).content['application/json'].schema;
    expect(schema.required).toEqual(expect.arrayContaining(['name', 'github', 'labels', 'provider']));
    expect(Object.keys(schema.properties)).toContain('bootstrapTimeout');
    const list = doc.paths['/api/v1/runners']!.get!;
    expect(list.parameters.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['query:pool', 'query:status', 'query:leaked']));
    expect(doc.paths['/ui']!.get!.security).toEqual([]);
    expect(doc.paths['/api/v1/runners/{name}']!.delete!.parameters.map((p) => p.name)).toEqual(['name', 'force', 'bypassBusy']);
  });

  it('lists the statuses the routes answer with', async () => {
    const doc = (await (await api.call('GET', '/openapi.json', { token: null })).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path]![method]!.responses);
    expect(statuses('/webhooks/github', 'post')).toEqual(expect.arrayContaining(['200', '202', '400', '401', '413', '500', '503']));
    expect(statuses('/api/v1/runners/{name}', 'delete')).toEqual(expect.arrayContaining(['400', '404', '409', '502']));
    expect(statuses('/api/v1/callbacks/status', 'post')).toEqual(expect.arrayContaining(['400', '401', '403']));
    expect(statuses('/api/v1/sweeps', 'get')).toContain('400');
    expect(statuses('/api/v1/redeliveries', 'get')).toContain('400');
    expect(statuses('/api/v1/liveness', 'get')).toContain('400');
    // Temporal may be down, or no worker there to answer, behind every route that needs it.
    for (const route of apiRoutes().filter((r) => r.auth === 'admin' || r.auth === 'instance-token')) {
      expect(statuses(route.path.replace(/:(\w+)/g, '{$1}'), route.method.toLowerCase()), `${route.method} ${route.path}`).toEqual(expect.arrayContaining(['503', '504']));
    }
    for (const route of apiRoutes().filter((r) => r.doc.body)) {
      expect(statuses(route.path.replace(/:(\w+)/g, '{$1}'), route.method.toLowerCase()), `${route.method} ${route.path}`).toEqual(expect.arrayContaining(['400', '413']));
    }
  });
});
