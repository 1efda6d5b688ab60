/**
 * An agent's `idle` callback waits briefly for its runner's job start to carry
 * it. The hold on its own, then through the app on the real server: runners
 * are started without a worker, and their histories show which signals came.
 */
import { createHmac } from 'node:crypto';
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdleReportHold } from '../../api/idle-report-hold';
import { mintInstanceToken } from '../../api/instance-token';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../../workflows/messages';
import { connectClient, instanceInput, uniqueName } from '../support/temporal';
import { signalsOf } from './history';
import { INSTANCE_TOKEN_KEY, WEBHOOK_SECRET, expectError, testApp } from './support';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A `deliver` that counts its calls and can be made to fail. */
function delivery(fail?: Error) {
  const calls = { count: 0 };
  const deliver = async () => {
    calls.count += 1;
    if (fail) throw fail;
  };
  return { calls, deliver };
}

const state = (p: Promise<unknown>) => Promise.race([p.then(() => 'resolved', () => 'rejected'), sleep(20).then(() => 'pending')]);

describe('IdleReportHold', () => {
  it('answers a held report without a signal of its own once the job start carrying it is delivered', async () => {
    const hold = new IdleReportHold({ holdMs: 60_000 });
    const { calls, deliver } = delivery();
    const answered = hold.report('r1', deliver);
    expect(await state(answered)).toBe('pending');
    expect(hold.heldCount).toBe(1);
    hold.jobStarting('r1')!.delivered();
    await answered;
    expect(calls.count).toBe(0);
    expect(hold.heldCount).toBe(0);
  });

  it('signals the report itself when the job start was not delivered, and passes on its outcome', async () => {
    const hold = new IdleReportHold({ holdMs: 60_000 });
    const ok = delivery();
    const answered = hold.report('r1', ok.deliver);
    hold.jobStarting('r1')!.notDelivered();
    await answered;
    expect(ok.calls.count).toBe(1);

    const refused = delivery(new Error('instance r2 of this token has been deleted'));
    const failing = hold.report('r2', refused.deliver);
    hold.jobStarting('r2')!.notDelivered();
    await expect(failing).rejects.toThrow('has been deleted');
  });

  it('signals a report whose job does not start within the hold', async () => {
    const hold = new IdleReportHold({ holdMs: 100 });
    const { calls, deliver } = delivery();
    const started = Date.now();
    await hold.report('idle-for-later', deliver);
    expect(calls.count).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(hold.heldCount).toBe(0);
  });

  it('answers a report that comes after its job start was delivered, or while it is on its way, without a signal', async () => {
    const hold = new IdleReportHold({ holdMs: 60_000 });
    hold.jobStarting('early')!.delivered();
    const late = delivery();
    await hold.report('early', late.deliver);
    expect(late.calls.count).toBe(0);

    const inFlight = hold.jobStarting('racing')!;
    const meanwhile = delivery();
    const answered = hold.report('racing', meanwhile.deliver);
    expect(await state(answered)).toBe('pending');
    inFlight.delivered();
    await answered;
    expect(meanwhile.calls.count).toBe(0);

    // The job start on its way failed: the report goes on its own.
    const failing = hold.jobStarting('lost')!;
    const own = delivery();
    const answeredAlone = hold.report('lost', own.deliver);
    failing.notDelivered();
    await answeredAlone;
    expect(own.calls.count).toBe(1);
  });

  it('answers a repeated report with the one already held', async () => {
    const hold = new IdleReportHold({ holdMs: 60_000 });
    const first = delivery();
    const second = delivery();
    const a = hold.report('r1', first.deliver);
    const b = hold.report('r1', second.deliver);
    hold.jobStarting('r1')!.delivered();
    await Promise.all([a, b]);
    expect(first.calls.count + second.calls.count).toBe(0);
  });

  it('signals at once with no hold, beyond its bound, and before a later report of the same runner', async () => {
    const off = new IdleReportHold({ holdMs: 0 });
    const direct = delivery();
    await off.report('r1', direct.deliver);
    expect(direct.calls.count).toBe(1);
    expect(off.jobStarting('r1')).toBeUndefined();

    const full = new IdleReportHold({ holdMs: 60_000, maxHeld: 1 });
    void full.report('held', delivery().deliver);
    const overflow = delivery();
    await full.report('overflow', overflow.deliver);
    expect(overflow.calls.count).toBe(1);

    // A `failed` after a held `idle`: the idle goes first, then the caller sends its own.
    const order: string[] = [];
    const hold = new IdleReportHold({ holdMs: 60_000 });
    const idle = hold.report('r2', async () => void order.push('idle'));
    await hold.releaseBefore('r2');
    order.push('failed');
    await idle;
    expect(order).toEqual(['idle', 'failed']);
  });

  it('signals every held report when released, as the API stops', async () => {
    const hold = new IdleReportHold({ holdMs: 60_000 });
    const a = delivery();
    const b = delivery();
    const answered = [hold.report('a', a.deliver), hold.report('b', b.deliver)];
    hold.releaseAll();
    await Promise.all(answered);
    expect([a.calls.count, b.calls.count]).toEqual([1, 1]);
  });
});

describe('an idle callback and its job start, through the API', () => {
  let connection: Connection;
  let client: Client;
  let taskQueue: string;
  let jobIds = Math.floor(Date.now() / 1000) * 1000 + 500;

  beforeAll(async () => {
    ({ connection, client } = await connectClient());
    taskQueue = uniqueName('api-idle-hold');
  });

  afterAll(async () => {
    await connection.close();
  });

  async function startInstance(): Promise<{ name: string; runId: string; token: string }> {
    const name = uniqueName('inst');
    const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { workflowId: runnerWorkflowId(name), taskQueue, args: [instanceInput(name)] });
    const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
    return { name, runId: handle.firstExecutionRunId, token };
  }

  function jobInProgress(api: ReturnType<typeof testApp>, runnerName: string, jobId: number) {
    const raw = JSON.stringify({ action: 'in_progress', workflow_job: { id: jobId, run_id: 7, labels: ['self-hosted'], runner_name: runnerName, created_at: '2026-01-01T00:00:00Z', started_at: '2026-01-01T00:00:01Z' }, repository: { full_name: 'acme/widgets' } });
    const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(raw).digest('hex')}`;
    return api.call('POST', '/webhooks/github', { token: null, raw, headers: { 'x-github-event': 'workflow_job', 'x-github-delivery': uniqueName('delivery'), 'x-hub-signature-256': signature } });
  }

  const idleCallback = (api: ReturnType<typeof testApp>, token: string) => api.call('POST', '/api/v1/callbacks/status', { token, body: { status: 'idle', message: 'runner online' } });

  it('delivers the agent coming online and its job as one jobStarted signal, and answers the callback once it is in history', async () => {
    const api = testApp(client, taskQueue, { idleReportHoldMs: 30_000 });
    const { name, runId, token } = await startInstance();
    const callback = idleCallback(api, token);
    await sleep(100);
    const jobId = ++jobIds;
    const webhook = await jobInProgress(api, name, jobId);
    expect(webhook.status).toBe(200);
    expect(await webhook.json()).toEqual({ result: 'signalled' });
    const answered = await callback;
    expect(answered.status).toBe(202);
    expect(await answered.json()).toEqual({ instance: name, status: 'idle' });
    expect((await signalsOf(client, runnerWorkflowId(name), runId)).map((s) => s.name)).toEqual(['jobStarted']);
  });

  it('drops an idle callback that comes after the job start was delivered: the workflow already knows more', async () => {
    const api = testApp(client, taskQueue, { idleReportHoldMs: 30_000 });
    const { name, runId, token } = await startInstance();
    expect((await jobInProgress(api, name, ++jobIds)).status).toBe(200);
    expect((await idleCallback(api, token)).status).toBe(202);
    expect((await signalsOf(client, runnerWorkflowId(name), runId)).map((s) => s.name)).toEqual(['jobStarted']);
  });

  it('signals idle on its own when no job starts within the hold', async () => {
    const api = testApp(client, taskQueue, { idleReportHoldMs: 300 });
    const { name, runId, token } = await startInstance();
    const started = Date.now();
    expect((await idleCallback(api, token)).status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await signalsOf(client, runnerWorkflowId(name), runId)).toEqual([{ name: 'runnerStatus', input: { status: 'idle', message: 'runner online' } }]);
  });

  it('signals what it holds at once when the API stops, so its callbacks are answered before it goes', async () => {
    const api = testApp(client, taskQueue, { idleReportHoldMs: 60_000 });
    const { name, runId, token } = await startInstance();
    const callback = idleCallback(api, token);
    await sleep(100);
    const stopping = Date.now();
    api.app.releaseHeld?.();
    expect((await callback).status).toBe(202);
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect((await signalsOf(client, runnerWorkflowId(name), runId)).map((s) => s.name)).toEqual(['runnerStatus']);
  });

  it('still refuses the callback of a deleted instance, after its hold', async () => {
    const api = testApp(client, taskQueue, { idleReportHoldMs: 200 });
    const { name, token } = await startInstance();
    await client.workflow.getHandle(runnerWorkflowId(name)).terminate('test: the instance is gone');
    await expectError(await idleCallback(api, token), 403, 'forbidden');
  });

  it('sends a held idle before a later failure report of the same runner, in the order the agent sent them', async () => {
    const api = testApp(client, taskQueue, { idleReportHoldMs: 30_000 });
    const { name, runId, token } = await startInstance();
    const idle = idleCallback(api, token);
    await sleep(100);
    const failed = await api.call('POST', '/api/v1/callbacks/status', { token, body: { status: 'failed', message: 'runner crashed' } });
    expect(failed.status).toBe(202);
    expect((await idle).status).toBe(202);
    expect((await signalsOf(client, runnerWorkflowId(name), runId)).map((s) => (s.input as { status: string }).status)).toEqual(['idle', 'failed']);
  });
});
