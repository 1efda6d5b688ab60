import type { Client, Connection } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeProviderControl } from '../../providers/fake';
import { deleteSignal } from '../../workflows/messages';
import { connectClient, eventually, FAST_TIMINGS, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { startWorkerProcess } from '../support/worker-child';
import { startInstance, waitForStatus } from './helpers';

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

it('a worker killed in the middle of a create is replaced and exactly one machine is made', async () => {
  const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-kill-'));
  const taskQueue = uniqueName('tq-kill');
  const name = uniqueName('killed');
  const fake = new FakeProviderControl(fakeDir);
  fake.setFault('create', { delayMs: 3_000, instance: name });

  const child = await startWorkerProcess(taskQueue, { FAKE_DIR: fakeDir });

  const handle = await startInstance(client, taskQueue, instanceInput(name, { timings: { ...FAST_TIMINGS, heartbeatTimeoutMs: 1_000 } }));
  await waitForStatus(handle, 'creating');
  await eventually(() => fake.attempts('create') >= 1, 10_000, 'create in progress on the first worker');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
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
