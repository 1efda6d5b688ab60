/**
 * A pool deleted while one of its runner starts is still in flight asks that
 * runner to leave before its workflow exists: the signal finds nothing and is
 * lost. When the runner then reports in without leaving, the pool knows it did
 * not hear and asks again, so the runner leaves and the pool closes, instead of
 * both waiting for each other forever. (A runner that never reports is asked
 * again after `leaveReaskInterval`: test/pool/pool-book.test.ts.)
 */
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPoolActivities, type StartRunnersArgs } from '../../activities/pool-activities';
import { runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { connectClient, eventually, FAST_TIMINGS, startTestWorker, temporalAddress, type TestWorker } from '../support/temporal';
import { autoRegister, poolSettings, startPool } from './helpers';

let client: Client;
let close: () => Promise<void>;
let worker: TestWorker;
/** Runner starts wait here until the test lets them through. */
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));

beforeAll(async () => {
  const connected = await connectClient();
  client = connected.client;
  close = () => connected.connection.close();
  // The start activity asks for eager starts, which need the worker side's native connection.
  const native = await NativeConnection.connect({ address: temporalAddress() });
  const real = createPoolActivities({ client: new Client({ connection: native, namespace: 'default' }) });
  const closeClient = close;
  close = async () => {
    await closeClient();
    await native.close();
  };
  worker = await startTestWorker({
    extraActivities: {
      async startRunners(args: StartRunnersArgs) {
        await gate;
        return real.startRunners(args);
      },
    },
  });
});

afterAll(async () => {
  openGate();
  await worker?.stop();
  await close?.();
});

it('asks a runner to leave again when the first ask came before its start landed and it reports in', async () => {
  const settings = poolSettings({ minIdleRunners: 1 });
  // The timed ask-again is far off: only the runner's own report can bring the second ask.
  const pool = await startPool(client, worker.taskQueue, { settings, timings: { ...FAST_TIMINGS, leaveReaskIntervalMs: 600_000 } });
  const [runner] = await eventually(async () => {
    const names = (await pool.query(poolStateQuery)).runners.map((r) => r.name);
    return names.length === 1 ? names : undefined;
  }, 20_000, 'the pool to count its runner');
  // Deleted while the start is held: the pool's ask goes to a workflow that does not exist yet.
  await pool.signal(deletePoolSignal, {});
  await eventually(async () => (await pool.query(poolStateQuery)).deleting, 10_000, 'the pool to start deleting');
  await expect(client.workflow.getHandle(runnerWorkflowId(runner!)).describe()).rejects.toThrow();
  // The server has tried the pool's signal and found no such workflow.
  await eventually(async () => {
    const history = await pool.fetchHistory();
    return (history.events ?? []).some((e) => e.signalExternalWorkflowExecutionFailedEventAttributes) ? true : undefined;
  }, 10_000, 'the first ask to fail');
  const agents = autoRegister(client, pool);
  try {
    openGate();
    const final = await pool.result();
    expect(final.runners).toEqual([]);
  } finally {
    agents.stop();
  }
  const state = await client.workflow.getHandle(runnerWorkflowId(runner!)).query(stateQuery);
  const events = (await pool.fetchHistory()).events ?? [];
  expect(events.filter((e) => e.signalExternalWorkflowExecutionFailedEventAttributes)).toHaveLength(1);
  expect(events.filter((e) => e.externalWorkflowExecutionSignaledEventAttributes).length).toBeGreaterThanOrEqual(1);
  expect(state.status).toBe('deleted');
  expect(state.transitions.find((t) => t.to === 'pending_delete')?.reason).toBe('pool deleted');
}, 60_000);
