/**
 * The status callback is checked against the live instance workflow. These
 * tests start instance workflows with no worker: Temporal records the signal in
 * history either way, which is what the API is responsible for.
 */
import { Client, type Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintInstanceToken } from '../../api/instance-token';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../../workflows/messages';
import { connectClient, instanceInput, uniqueName } from '../support/temporal';
import { signalsOf } from './history';
import { INSTANCE_TOKEN_KEY, expectError, testApp, type TestApp } from './support';

let connection: Connection;
let client: Client;
let api: TestApp;
let taskQueue: string;
/** Describe calls the API made: the callback of a live run should need none. */
let describes = 0;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  taskQueue = uniqueName('api-callbacks');
  const counting = new Client({
    connection,
    interceptors: {
      workflow: [
        {
          describe: (input, next) => {
            describes += 1;
            return next(input);
          },
        },
      ],
    },
  });
  api = testApp(counting, taskQueue);
});

afterAll(async () => {
  await connection.close();
});

async function startInstance(name = uniqueName('inst')): Promise<{ name: string; runId: string }> {
  const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, {
    workflowId: runnerWorkflowId(name),
    taskQueue,
    args: [instanceInput(name)],
  });
  return { name, runId: handle.firstExecutionRunId };
}

async function tokenFor(instance: string, runId: string, ttlMs = 60_000): Promise<string> {
  return mintInstanceToken({ instance, runId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, ttlMs);
}

function report(token: string | null, body: unknown = { status: 'idle', message: 'runner online' }) {
  return api.call('POST', '/api/v1/callbacks/status', { token, body });
}

describe('POST /api/v1/callbacks/status', () => {
  it('passes the status of a live instance to its workflow run, without looking the run up first', async () => {
    const { name, runId } = await startInstance();
    const describesBefore = describes;
    const response = await report(await tokenFor(name, runId));
    expect(response.status).toBe(202);
    expect(describes - describesBefore).toBe(0);
    expect(await response.json()).toEqual({ instance: name, status: 'idle' });
    expect(await signalsOf(client, runnerWorkflowId(name), runId)).toEqual([{ name: 'runnerStatus', input: { status: 'idle', message: 'runner online' } }]);
  });

  it('scrubs credentials out of the message a machine reports, before it reaches workflow history', async () => {
    const { name, runId } = await startInstance();
    const token = await tokenFor(name, runId);
    // A runner's failure output may quote what it was started with: its JIT config, its own token.
    const jitConfig = Buffer.from(JSON.stringify({ '.runner': 'c2VjcmV0LXJ1bm5lci1maWxl', '.credentials': 'c2VjcmV0LWNyZWRlbnRpYWxz' })).toString('base64');
    const message = `config failed: ./run.sh --jitconfig ${jitConfig} (callback token ${token})`;
    expect((await report(token, { status: 'failed', message })).status).toBe(202);
    const [signal] = await signalsOf(client, runnerWorkflowId(name), runId);
    const recorded = (signal?.input as { message?: string } | undefined)?.message ?? '';
    expect(recorded).toContain('config failed: ./run.sh --jitconfig [redacted]');
    expect(recorded).not.toContain(jitConfig);
    expect(recorded).not.toContain(token);
  });

  it('answers a missing token with 401 and an invalid one with 401 naming the reason', async () => {
    const { name, runId } = await startInstance();
    await expectError(await report(null), 401, 'unauthenticated');
    const wrongKey = await mintInstanceToken({ instance: name, runId, pool: 'p' }, 'a-different-key-0123456789', 60_000);
    const error = await expectError(await report(wrongKey), 401, 'invalid_token');
    expect(error.details).toEqual({ reason: 'bad_signature' });
    // The admin token is not an instance token.
    expect((await expectError(await report('test-admin-token-0123456789'), 401, 'invalid_token')).details).toEqual({ reason: 'malformed' });
    expect(await signalsOf(client, runnerWorkflowId(name), runId)).toEqual([]);
  });

  it('refuses an expired token', async () => {
    const { name, runId } = await startInstance();
    const token = await tokenFor(name, runId, 1);
    await new Promise((r) => setTimeout(r, 2_100));
    const error = await expectError(await report(token), 401, 'invalid_token');
    expect(error.details).toEqual({ reason: 'expired' });
    expect(await signalsOf(client, runnerWorkflowId(name), runId)).toEqual([]);
  });

  it('refuses the token of a deleted instance', async () => {
    const { name, runId } = await startInstance();
    await client.workflow.getHandle(runnerWorkflowId(name)).terminate('deleted for the test');
    const error = await expectError(await report(await tokenFor(name, runId)), 403, 'forbidden');
    expect(error.message).toMatch(/has been deleted/);
    const never = await expectError(await report(await tokenFor(uniqueName('never-existed'), runId)), 403, 'forbidden');
    expect(never.message).toMatch(/does not exist/);
  });

  it('refuses the token of an earlier run of the same instance name', async () => {
    const first = await startInstance();
    await client.workflow.getHandle(runnerWorkflowId(first.name)).terminate('replaced for the test');
    const second = await startInstance(first.name);
    expect(second.runId).not.toBe(first.runId);
    const describesBefore = describes;
    const error = await expectError(await report(await tokenFor(first.name, first.runId)), 403, 'forbidden');
    // The token's run has ended: only then is the live run looked up.
    expect(describes - describesBefore).toBe(1);
    expect(error.message).toMatch(/current run/);
    expect(await signalsOf(client, runnerWorkflowId(first.name), second.runId)).toEqual([]);
  });

  it("refuses a token bound to another instance's run, and a body naming another instance", async () => {
    const a = await startInstance();
    const b = await startInstance();
    await expectError(await report(await tokenFor(a.name, b.runId)), 403, 'forbidden');
    const error = await expectError(await report(await tokenFor(a.name, a.runId), { status: 'idle', instance: b.name }), 403, 'forbidden');
    expect(error.message).toContain(b.name);
    expect(await signalsOf(client, runnerWorkflowId(a.name), a.runId)).toEqual([]);
    expect(await signalsOf(client, runnerWorkflowId(b.name), b.runId)).toEqual([]);
  });

  it('validates the reported status', async () => {
    const { name, runId } = await startInstance();
    const error = await expectError(await report(await tokenFor(name, runId), { status: 'sleeping' }), 400, 'validation_failed');
    expect(error.details).toEqual([{ path: 'status', message: expect.stringContaining('installing') }]);
  });
});
