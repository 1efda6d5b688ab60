/**
 * GARM's install templates fetch a registration token from the metadata URL with
 * the instance's token, and report `idle` with an `agent_id`.
 */
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintInstanceToken } from '../../api/instance-token';
import { GitHubRateLimitError } from '../../github/port';
import { instanceStartOptions } from '../../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { GitHubDouble } from '../support/github-double';
import { connectClient, instanceInput, uniqueName } from '../support/temporal';
import { signalsOf } from './history';
import { INSTANCE_TOKEN_KEY, expectError, testApp, type TestApp } from './support';

let connection: Connection;
let client: Client;
let api: TestApp;
let taskQueue: string;
const github = new GitHubDouble();

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  taskQueue = uniqueName('api-metadata');
  api = testApp(client, taskQueue, { github });
});
afterAll(async () => {
  await connection.close();
});

/** A live instance workflow (no worker needed: the API only describes and signals it). */
async function liveInstance(): Promise<{ name: string; token: string; runId: string }> {
  const name = uniqueName('garm');
  const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(instanceInput(name)) });
  const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
  return { name, token, runId: handle.firstExecutionRunId };
}

describe('GET /api/v1/metadata/runner-registration-token/', () => {
  it('hands the instance a registration token for its own scope', async () => {
    const { name, token } = await liveInstance();
    const response = await api.call('GET', '/api/v1/metadata/runner-registration-token/', { token });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.text()).toBe(`REGTOKEN-${name}`);
    expect(github.calls.filter((c) => c.op === 'credential' && c.name === name).map((c) => c.outcome)).toEqual(['registration-token']);
  });

  it('refuses a missing token, and a token of a deleted instance', async () => {
    await expectError(await api.call('GET', '/api/v1/metadata/runner-registration-token', { token: null }), 401, 'unauthenticated');
    const { name, token } = await liveInstance();
    await client.workflow.getHandle(`runner/${name}`).terminate('test');
    await expectError(await api.call('GET', '/api/v1/metadata/runner-registration-token/', { token }), 403, 'forbidden');
  });

  it('says when GitHub is rate limited, with Retry-After', async () => {
    const { token } = await liveInstance();
    github.setFault('credential', { failTimes: 1, error: () => new GitHubRateLimitError('primary', 42_000) });
    const response = await api.call('GET', '/api/v1/metadata/runner-registration-token/', { token });
    expect(response.headers.get('retry-after')).toBe('42');
    await expectError(response, 503, 'github_rate_limited');
  });
});

describe("GARM's idle report", () => {
  it('is accepted with its agent_id and reaches the instance as idle', async () => {
    const { name, token, runId } = await liveInstance();
    const response = await api.call('POST', '/api/v1/callbacks/status', { token, body: { status: 'idle', message: 'runner successfully installed', agent_id: 17 } });
    expect(response.status).toBe(202);
    expect(await signalsOf(client, `runner/${name}`, runId)).toEqual([{ name: 'runnerStatus', input: { status: 'idle', message: 'runner successfully installed' } }]);
  });
});
