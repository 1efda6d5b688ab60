/**
 * Input that used to get past validation (durations that overflow, a pool name
 * that is no string) or reach a 500 (an instance whose GitHub credentials were
 * dropped from the config) gets an error naming what is wrong.
 */
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { mintInstanceToken } from '../../api/instance-token';
import { createGitHubRegistry } from '../../github/registry';
import { instanceStartOptions } from '../../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { poolWorkflowId } from '../../workflows/pool-messages';
import { connectClient, instanceInput, uniqueName } from '../support/temporal';
import { ADMIN_TOKEN, INSTANCE_TOKEN_KEY, WEBHOOK_SECRET, expectError, recordingLogger, testApp, testConfig, validPool, type TestApp } from './support';

let connection: Connection;
let client: Client;
let api: TestApp;
let taskQueue: string;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  taskQueue = uniqueName('api-bad-input');
  api = testApp(client, taskQueue);
});

afterAll(async () => {
  await connection.close();
});

const poolName = () => uniqueName('pool').toLowerCase().slice(0, 60);

describe('pool durations out of range', () => {
  it.each([
    ['a run of 400 digits', '9'.repeat(400)],
    ['a huge count of a unit', `${'9'.repeat(400)}d`],
    ['more than 365 days', '366d'],
    ['more than 365 days in milliseconds', 365 * 86_400_000 + 1],
  ])('POST refuses %s with 400 naming idleTimeout, and starts nothing', async (_what, value) => {
    const name = poolName();
    const error = await expectError(await api.call('POST', '/api/v1/pools', { body: validPool(name, { idleTimeout: value }) }), 400, 'validation_failed');
    expect(error.message).toMatch(/idleTimeout: duration .* is longer than the maximum of 365d/);
    expect(error.details).toEqual([expect.objectContaining({ path: 'idleTimeout' })]);
    await expectError(await api.call('GET', `/api/v1/pools/${name}`), 404);
  });

  it('POST refuses a JSON number that overflows to Infinity with 400 naming idleTimeout', async () => {
    const raw = JSON.stringify(validPool(poolName(), { idleTimeout: 0 })).replace('"idleTimeout":0', '"idleTimeout":1e400');
    const error = await expectError(await api.call('POST', '/api/v1/pools', { raw }), 400, 'validation_failed');
    expect(error.details).toEqual([expect.objectContaining({ path: 'idleTimeout' })]);
  });

  it('PUT refuses an overflowing bootstrapTimeout with 400 naming the field', async () => {
    const name = poolName();
    const response = await api.call('PUT', `/api/v1/pools/${name}`, { body: validPool(name, { bootstrapTimeout: `${'9'.repeat(400)}ms` }) });
    const error = await expectError(response, 400, 'validation_failed');
    expect(error.message).toMatch(/bootstrapTimeout: duration .* is longer than the maximum/);
  });

  it.each([
    ['a fraction of a millisecond', '0.0001ms'],
    ['half a millisecond as a number', 1.5],
  ])('POST refuses %s with 400 naming idleTimeout, and starts nothing', async (_what, value) => {
    const name = poolName();
    const error = await expectError(await api.call('POST', '/api/v1/pools', { body: validPool(name, { idleTimeout: value }) }), 400, 'validation_failed');
    expect(error.message).toMatch(/idleTimeout: duration .* is not a whole number of milliseconds/);
    expect(error.details).toEqual([expect.objectContaining({ path: 'idleTimeout' })]);
    await expectError(await api.call('GET', `/api/v1/pools/${name}`), 404);
  });

  it('reads a fraction of a unit as the whole milliseconds it names', async () => {
    const name = poolName();
    const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { idleTimeout: '1.005s' }) });
    expect(response.status, await response.clone().text()).toBe(201);
    expect(((await response.json()) as { pool: { idleTimeout: number } }).pool.idleTimeout).toBe(1_005);
    await client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
  });

  it('still accepts 365 days', async () => {
    const name = poolName();
    const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { idleTimeout: '365d' }) });
    expect(response.status, await response.clone().text()).toBe(201);
    expect(((await response.json()) as { pool: { idleTimeout: number } }).pool.idleTimeout).toBe(365 * 86_400_000);
    await client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
  });
});

describe('extra specs every runner carries', () => {
  it('POST and PUT refuse more than 16 KiB of them as JSON, saying the size and the limit, and start nothing', async () => {
    const name = poolName();
    const extraSpecs = { userData: 'x'.repeat(42 * 1024) };
    const error = await expectError(await api.call('POST', '/api/v1/pools', { body: validPool(name, { extraSpecs }) }), 400, 'validation_failed');
    expect(error.details).toEqual([{ path: 'extraSpecs', message: expect.stringMatching(/^is 43023 bytes as JSON; at most 16384 \(16 KiB\)/) }]);
    await expectError(await api.call('GET', `/api/v1/pools/${name}`), 404);
    const put = await expectError(await api.call('PUT', `/api/v1/pools/${name}`, { body: validPool(name, { extraSpecs }) }), 400, 'validation_failed');
    expect(put.message).toContain('extraSpecs: is 43023 bytes as JSON');
  });

  it('POST takes 16 KiB of them', async () => {
    const name = poolName();
    const extraSpecs = { userData: 'x'.repeat(16 * 1024 - '{"userData":""}'.length) };
    const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { extraSpecs }) });
    expect(response.status, await response.clone().text()).toBe(201);
    await client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
  });
});

describe('the rest of what every runner carries', () => {
  it('POST and PUT refuse labels, image, flavor, runner group and scope past 8 KiB together, naming the largest, and start nothing', async () => {
    const name = poolName();
    const image = `registry.example.com/${'i'.repeat(700_000)}`;
    const error = await expectError(await api.call('POST', '/api/v1/pools', { body: validPool(name, { image }) }), 400, 'validation_failed');
    expect(error.details).toEqual([{ path: 'image', message: expect.stringMatching(/come to \d+ bytes as JSON, image the largest; at most 8192 \(8 KiB\), since every runner of the pool carries a copy$/) }]);
    await expectError(await api.call('GET', `/api/v1/pools/${name}`), 404);
    const labels = Array.from({ length: 40 }, (_, i) => `label-${i}-${'l'.repeat(240)}`);
    const put = await expectError(await api.call('PUT', `/api/v1/pools/${name}`, { body: validPool(name, { labels }) }), 400, 'validation_failed');
    expect(put.message).toMatch(/labels: .* labels the largest; at most 8192/);
  });

  it('POST takes a long image reference and the 100 labels of ordinary length a pool may have', async () => {
    const name = poolName();
    const labels = Array.from({ length: 100 }, (_, i) => `label-${i}`);
    const image = `123456789012.dkr.ecr.eu-west-1.amazonaws.com/${'team/'.repeat(20)}runner@sha256:${'a'.repeat(64)}`;
    const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { labels, image }) });
    expect(response.status, await response.clone().text()).toBe(201);
    await client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
  });
});

describe('a body nested too deep', () => {
  it('is refused with 400 naming the limit, not a 500', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const raw = JSON.stringify(validPool(poolName(), { extraSpecs: { x: 1 } })).replace('{"x":1}', `{"x":${deep}}`);
    const error = await expectError(await api.call('POST', '/api/v1/pools', { raw }), 400, 'too_deep');
    expect(error.message).toBe('request body nests arrays and objects more than 64 levels deep; nothing the API takes needs more');
    // Brackets inside strings are text, not nesting.
    const name = poolName();
    const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { extraSpecs: { text: '['.repeat(100) } }) });
    expect(response.status, await response.clone().text()).toBe(201);
    await client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
  });
});

describe('PUT /api/v1/pools/:name with a name that is no string', () => {
  it.each([
    ['an object whose toString is no function', { toString: 0 }, 'object'],
    ['an object', { a: 1 }, 'object'],
    ['an array', ['x'], 'an array'],
    ['a number', 7, 'number'],
    ['null', null, 'null'],
  ])('answers 400 naming the field for %s', async (_what, value, got) => {
    const name = poolName();
    const response = await api.call('PUT', `/api/v1/pools/${name}`, { body: { ...validPool(name), name: value } });
    const error = await expectError(response, 400, 'validation_failed');
    expect(error.message).toBe(`invalid pool: name: expected a string, got ${got}`);
    expect(error.details).toEqual([{ path: 'name', message: `expected a string, got ${got}` }]);
  });
});

describe('registration token for an instance whose GitHub credentials are gone', () => {
  it('answers 409 naming the credentials, without a stack', async () => {
    const config = testConfig(taskQueue);
    const logger = recordingLogger();
    const app = createApp({
      client,
      taskQueue,
      config,
      github: createGitHubRegistry(config, {}),
      secrets: { adminToken: ADMIN_TOKEN, webhookSecret: WEBHOOK_SECRET, instanceTokenKey: INSTANCE_TOKEN_KEY },
      logger,
      limits: { queryTimeoutMs: 3_000 },
    });
    const name = uniqueName('gone-creds');
    // A runner that registers with a registration token: a JIT runner is refused one before its credentials matter.
    const input = instanceInput(name, {}, { ephemeral: false, github: { credentials: 'retired', scope: { kind: 'repo', owner: 'acme', repo: 'widgets' } } });
    const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(input) });
    try {
      const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
      const response = await app(new Request('http://127.0.0.1/api/v1/metadata/runner-registration-token/', { headers: { authorization: `Bearer ${token}` } }));
      const error = await expectError(response, 409, 'github_credentials_unknown');
      expect(error.message).toContain('no GitHub credentials named "retired" in github.credentials (configured: "default")');
      expect(error.message).toContain(`instance ${name}`);
      expect(logger.entries.filter((e) => e.level === 'error')).toEqual([]);
    } finally {
      await handle.terminate('test done');
    }
  });
});
