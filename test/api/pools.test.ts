/**
 * Pool routes against Temporal. The pool workflow itself is not needed to
 * check what the API starts and signals: no worker runs on this task queue,
 * and the workflow history shows what was sent.
 */
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTimings } from '../../domain/timings';
import { RUNNER_POOL } from '../../workflows/search-attributes';
import { poolWorkflowId, type RunnerPoolInput } from '../../workflows/pool-messages';
import { connectClient, eventually, uniqueName } from '../support/temporal';
import { signalsOf } from './history';
import { expectError, testApp, validPool, type TestApp } from './support';

let connection: Connection;
let client: Client;
let api: TestApp;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  api = testApp(client, uniqueName('api-pools'), { limits: { queryTimeoutMs: 1_000 } });
});

afterAll(async () => {
  await connection.close();
});

const poolName = () => uniqueName('pool').toLowerCase().slice(0, 60);

async function createPool(overrides: Record<string, unknown> = {}): Promise<string> {
  const name = poolName();
  const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, overrides) });
  expect(response.status, await response.clone().text()).toBe(201);
  return name;
}

describe('POST /api/v1/pools', () => {
  it('starts the pool workflow with validated settings, timings, search attribute and memo', async () => {
    const name = poolName();
    const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { bootstrapTimeout: '2m', priority: 7 }) });
    expect(response.status).toBe(201);
    expect(response.headers.get('location')).toBe(`/api/v1/pools/${name}`);
    const { pool } = (await response.json()) as { pool: Record<string, unknown> };
    expect(pool).toMatchObject({ name, bootstrapTimeout: 120_000, priority: 7, minIdleRunners: 0, ephemeral: true, enabled: true });

    const description = await client.workflow.getHandle(poolWorkflowId(name)).describe();
    expect(description.type).toBe('runnerPool');
    expect(description.status.name).toBe('RUNNING');
    expect(description.typedSearchAttributes.get(RUNNER_POOL)).toBe(name);
    expect(description.memo).toEqual({
      labels: ['linux', name],
      priority: 7,
      enabled: true,
      maxRunners: 3,
      provider: 'fake',
      scope: { kind: 'repo', owner: 'acme', repo: 'widgets' },
      credentials: 'default',
    });
    const history = await client.workflow.getHandle(poolWorkflowId(name)).fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
    const input = JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString()) as RunnerPoolInput;
    expect(input.settings).toEqual(pool);
    // The liveness passes run (the default), so the pool's own look for ended runners is an hourly backstop.
    expect(input.timings).toEqual({ ...resolveTimings({}), poolAuditIntervalMs: 60 * 60_000 });
  });

  it('answers 409 when the pool exists', async () => {
    const name = await createPool();
    const error = await expectError(await api.call('POST', '/api/v1/pools', { body: validPool(name) }), 409, 'already_exists');
    expect(error.message).toContain(name);
  });
});

describe('GET /api/v1/pools', () => {
  it('lists running pools with their memo', async () => {
    const name = await createPool({ priority: 3 });
    const listed = await eventually(async () => {
      const { pools } = (await (await api.call('GET', '/api/v1/pools')).json()) as { pools: { name: string }[] };
      return pools.find((p) => p.name === name);
    }, 20_000, 'pool in the list');
    expect(listed).toMatchObject({ name, labels: ['linux', name], priority: 3, enabled: true, maxRunners: 3, provider: 'fake' });
  });
});

describe('GET /api/v1/pools/:name', () => {
  it('answers 404 for an unknown pool', async () => {
    const error = await expectError(await api.call('GET', '/api/v1/pools/no-such-pool-here'), 404, 'not_found');
    expect(error.message).toContain('no-such-pool-here');
  });

  it('answers 504 when no worker answers the state query in time', async () => {
    const name = await createPool();
    const response = await api.call('GET', `/api/v1/pools/${name}`);
    // Should it answer otherwise, what the API logged names the error.
    expect(response.status, JSON.stringify(api.logger.entries.slice(-3))).toBe(504);
    const error = await expectError(response, 504, 'temporal_timeout');
    expect(error.message).toMatch(/worker/);
  });
});

describe('PUT /api/v1/pools/:name', () => {
  it('validates and sends the new settings to the pool', async () => {
    const name = await createPool();
    const { name: _omitted, ...body } = validPool(name, { maxRunners: 9, idleTimeout: '30s' });
    const response = await api.call('PUT', `/api/v1/pools/${name}`, { body });
    expect(response.status).toBe(202);
    const signals = await signalsOf(client, poolWorkflowId(name));
    expect(signals).toHaveLength(1);
    expect(signals[0]).toMatchObject({ name: 'updatePool', input: { settings: { name, maxRunners: 9, idleTimeout: 30_000 } } });
  });

  it('refuses invalid settings with the field paths, a rename, and unknown pools', async () => {
    const name = await createPool();
    const invalid = await expectError(await api.call('PUT', `/api/v1/pools/${name}`, { body: validPool(name, { maxRunners: -1, minIdleRunners: 'two' }) }), 400);
    expect((invalid.details as { path: string }[]).map((d) => d.path).sort()).toEqual(['maxRunners', 'minIdleRunners']);
    // A pool's whole state must fit the server's payload limit: larger fleets are several pools.
    const tooLarge = await expectError(await api.call('PUT', `/api/v1/pools/${name}`, { body: validPool(name, { maxRunners: 5_001 }) }), 400);
    expect(tooLarge.details).toEqual([expect.objectContaining({ path: 'maxRunners', message: expect.stringMatching(/at most 5000 per pool/) })]);
    const rename = await expectError(await api.call('PUT', `/api/v1/pools/${name}`, { body: validPool('other-name') }), 400);
    expect(rename.message).toMatch(/cannot be renamed/);
    await expectError(await api.call('PUT', '/api/v1/pools/no-such-pool-here', { body: validPool('no-such-pool-here') }), 404);
    expect(await signalsOf(client, poolWorkflowId(name))).toEqual([]);
  });

  it("refuses to change a pool's mode, and sends nothing", async () => {
    const name = await createPool();
    const body = validPool(name, { mode: 'scaleSet', ephemeral: true, scaleSet: { name } });
    const refused = await expectError(await api.call('PUT', `/api/v1/pools/${name}`, { body }), 409, 'mode_change');
    expect(refused.message).toBe(`pool ${name} is a webhook pool and mode cannot be changed to scaleSet; delete the pool and create it again`);
    expect(await signalsOf(client, poolWorkflowId(name))).toEqual([]);
  });
});

describe('DELETE /api/v1/pools/:name', () => {
  it('sends deletePool and answers 202', async () => {
    const name = await createPool();
    const response = await api.call('DELETE', `/api/v1/pools/${name}`);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ pool: name, action: 'delete' });
    expect(await signalsOf(client, poolWorkflowId(name))).toEqual([{ name: 'deletePool', input: { reason: 'deleted through the API' } }]);
  });

  it('answers 404 for an unknown or ended pool', async () => {
    await expectError(await api.call('DELETE', '/api/v1/pools/no-such-pool-here'), 404, 'not_found');
    const name = await createPool();
    await client.workflow.getHandle(poolWorkflowId(name)).terminate('ended for the test');
    const error = await expectError(await api.call('DELETE', `/api/v1/pools/${name}`), 404, 'not_found');
    expect(error.message).toMatch(/ended/);
  });
});
