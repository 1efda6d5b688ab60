/**
 * A runner whose first workflow task already holds the signals that make it leave (its job done
 * while its workflow waited for a worker, as it does while a killed worker is replaced) creates
 * its machine inline and deletes it again in that one task. Should the task be run again, its
 * local activities' markers lost with it, the create must not make a second machine.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeProviderControl } from '../../providers/fake';
import { jobCompletedSignal, jobStartedSignal, runnerStatusSignal } from '../../workflows/messages';
import { connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { startWorkerProcess } from '../support/worker-child';
import { EventType, eventsOf, startInstance } from './helpers';

let client: Client;
let connection: Connection;
let worker: TestWorker | undefined;
let takeover: TestWorker | undefined;
let child: ChildProcess | undefined;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await worker?.stop();
  await takeover?.stop();
  await connection?.close();
});

/** A runner started with no worker yet: its job comes and goes before its first workflow task runs. */
async function runnerWithItsJobOver(prefix: string) {
  const fakeDir = mkdtempSync(join(tmpdir(), `runnerflow-${prefix}-`));
  const taskQueue = uniqueName(`tq-${prefix}`);
  const name = uniqueName(prefix);
  const handle = await startInstance(client, taskQueue, instanceInput(name));
  await handle.signal(runnerStatusSignal, { status: 'idle' });
  await handle.signal(jobStartedSignal, { jobId: 7 });
  await handle.signal(jobCompletedSignal, { jobId: 7, conclusion: 'success' });
  return { fakeDir, taskQueue, name, handle };
}

it('a runner whose first task creates and deletes its machine makes one machine, though a signal comes while that task runs', async () => {
  const { fakeDir, taskQueue, name, handle } = await runnerWithItsJobOver('one-task');
  // The create takes a moment, so that a signal arrives while the task runs.
  new FakeProviderControl(fakeDir).setFault('create', { delayMs: 1_000, instance: name });
  worker = await startTestWorker({ taskQueue, fakeDir, fakeInlineMs: 3_000 });
  await eventually(() => worker!.fake.attempts('create') >= 1, 20_000, 'the create under way');
  await handle.signal(runnerStatusSignal, { status: 'idle' });

  const final = await handle.result();
  expect(final.status).toBe('deleted');
  expect(worker.fake.instance(name)).toBeUndefined();
  expect(worker.fake.createdCount(name)).toBe(1);
  // The last signal came while the first task ran: a completion that closed the workflow would
  // have been refused for it, and the task run again.
  const events = await eventsOf(handle);
  const firstTask = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const signals = events.map((e, i) => (e.workflowExecutionSignaledEventAttributes ? i : -1)).filter((i) => i >= 0);
  expect(signals).toHaveLength(4);
  expect(signals.at(-1)).toBeGreaterThan(firstTask);
});

it('a runner whose first task creates and deletes its machine makes one machine, though its worker dies right after the delete', async () => {
  const { fakeDir, taskQueue, name, handle } = await runnerWithItsJobOver('one-task-kill');
  // The worker dies the moment its provider has deleted the machine: whatever task did the
  // delete is lost with it, and run again by the next worker.
  child = await startWorkerProcess(taskQueue, { FAKE_DIR: fakeDir, FAKE_INLINE_MS: '3000', DIE_AFTER_DELETE: '1' });
  const fake = new FakeProviderControl(fakeDir);
  await new Promise((r) => child!.once('exit', r));
  expect(fake.calls('delete').filter((c) => c.outcome === 'deleted')).toHaveLength(1);

  takeover = await startTestWorker({ taskQueue, fakeDir, fakeInlineMs: 3_000 });
  const final = await handle.result();
  expect(final.status).toBe('deleted');
  expect(fake.instance(name)).toBeUndefined();
  expect(fake.createdCount(name)).toBe(1);
});
