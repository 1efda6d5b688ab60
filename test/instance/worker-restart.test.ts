import type { ChildProcess } from 'node:child_process';
import type { Client, Connection } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeProviderControl } from '../../providers/fake';
import { deleteSignal, jobCompletedSignal, jobStartedSignal, runnerStatusSignal } from '../../workflows/messages';
import { connectClient, eventually, FAST_TIMINGS, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { startWorkerProcess } from '../support/worker-child';
import { scheduledActivities, startInstance, waitForStatus } from './helpers';

let client: Client;
let connection: Connection;
let takeover: TestWorker | undefined;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
});
afterAll(async () => {
  await takeover?.stop();
  await connection?.close();
});

/** A fake provider's state, a task queue and a runner name of the test's own. */
function killScene(prefix: string) {
  const fakeDir = mkdtempSync(join(tmpdir(), `runnerflow-${prefix}-`));
  return { fakeDir, taskQueue: uniqueName(`tq-${prefix}`), name: uniqueName(prefix), fake: new FakeProviderControl(fakeDir) };
}

/** Kills the worker once the provider has seen `op` begin, as a crashed machine would. */
async function killDuring(child: ChildProcess, fake: FakeProviderControl, op: 'create' | 'delete'): Promise<void> {
  await eventually(() => fake.attempts(op) >= 1, 10_000, `${op} in progress on the first worker`);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
}

it('a worker killed in the middle of a create is replaced and exactly one machine is made', async () => {
  const { fakeDir, taskQueue, name, fake } = killScene('killed');
  fake.setFault('create', { delayMs: 3_000, instance: name });

  const child = await startWorkerProcess(taskQueue, { FAKE_DIR: fakeDir });

  const handle = await startInstance(client, taskQueue, instanceInput(name, { timings: { ...FAST_TIMINGS, heartbeatTimeoutMs: 1_000 } }));
  await waitForStatus(handle, 'creating');
  await killDuring(child, fake, 'create');
  expect(fake.instance(name)).toBeUndefined();

  takeover = await startTestWorker({ taskQueue, fakeDir });
  const running = await waitForStatus(handle, 'running', 30_000);
  expect(running.providerId).toBe(`fake-${name}`);
  await handle.signal(deleteSignal, { reason: 'done' });
  const final = await handle.result();
  expect(final.status).toBe('deleted');
  expect(fake.createdCount(name)).toBe(1);
  // The second worker did the work: the killed one never finished its attempt.
  const pids = new Set(fake.calls('create').filter((c) => c.outcome === 'created').map((c) => c.pid));
  expect(pids).toEqual(new Set([process.pid]));
});

it('a worker killed in the middle of an inline delete is replaced, the machine is deleted and the runner closes', async () => {
  const { fakeDir, taskQueue, name, fake } = killScene('killed-del');

  // The first worker deletes inline, and its delete takes longer than it will live.
  const child = await startWorkerProcess(taskQueue, { FAKE_DIR: fakeDir, FAKE_INLINE_MS: '5000' });
  const handle = await startInstance(client, taskQueue, instanceInput(name));
  await waitForStatus(handle, 'running');
  fake.setFault('delete', { delayMs: 4_000, instance: name });
  await handle.signal(runnerStatusSignal, { status: 'idle' });
  await handle.signal(jobStartedSignal, { jobId: 11 });
  await handle.signal(jobCompletedSignal, { jobId: 11, conclusion: 'success' });
  await killDuring(child, fake, 'delete');
  fake.clearFaults('delete');
  expect(fake.instance(name)).toBeDefined();

  // The replacement replays the runner to its delete and asks the provider again.
  const replacement = await startTestWorker({ taskQueue, fakeDir });
  try {
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: false, leaked: false });
    expect(fake.instance(name)).toBeUndefined();
    const pids = new Set(fake.calls('delete').filter((c) => c.outcome === 'deleted').map((c) => c.pid));
    expect(pids).toEqual(new Set([process.pid]));
    // The first worker's attempt was inline (no activity of its own); the replacement, whose
    // provider has no inline bound, used the activity.
    expect(await scheduledActivities(handle)).toEqual(['deleteInstance']);
  } finally {
    await replacement.stop();
  }
});

it('a worker killed in the middle of an inline create is replaced and exactly one machine is made', async () => {
  const { fakeDir, taskQueue, name, fake } = killScene('killed-inline');
  fake.setFault('create', { delayMs: 3_000, instance: name });

  const child = await startWorkerProcess(taskQueue, { FAKE_DIR: fakeDir, FAKE_INLINE_MS: '5000' });
  const handle = await startInstance(client, taskQueue, instanceInput(name));
  await killDuring(child, fake, 'create');
  fake.clearFaults('create');
  expect(fake.instance(name)).toBeUndefined();

  const replacement = await startTestWorker({ taskQueue, fakeDir });
  try {
    const running = await waitForStatus(handle, 'running', 30_000);
    expect(running.providerId).toBe(`fake-${name}`);
    expect(fake.createdCount(name)).toBe(1);
    await handle.signal(deleteSignal, { reason: 'done' });
    expect(await handle.result()).toMatchObject({ status: 'deleted' });
  } finally {
    await replacement.stop();
  }
});
