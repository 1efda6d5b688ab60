import type { Client, Connection } from '@temporalio/client';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sessionOwnerName } from '../../domain/scale-set';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';
import { SCALE_SET_LISTENER_WORKFLOW, scaleSetListenerId, scaleSetStateQuery, stopListenerSignal, updateListenerSignal, type ScaleSetListenerInput } from '../../workflows/scale-set-messages';
import { connectClient, eventually, FAST_TIMINGS, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { simulatorRegistry } from '../support/simulator-registry';
import { startWorkerProcess } from '../support/worker-child';
import type { InstanceTimings } from '../../domain/timings';

let client: Client;
let connection: Connection;
let sim: GitHubSimulator;
let takeover: TestWorker | undefined;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
  sim = await startGitHubSimulator({ longPollMs: 4_000, sessionIdleTimeoutMs: 60_000, onError: () => undefined });
});
afterAll(async () => {
  await takeover?.stop();
  await sim?.close();
  await connection?.close();
});

function listenerInput(pool: string, maxRunners: number, timings: InstanceTimings): ScaleSetListenerInput {
  return {
    settings: {
      pool,
      target: { credentials: 'default', scope: { kind: 'org', org: 'acme' } },
      name: pool,
      runnerGroup: 'Default',
      labels: [],
      minRunners: 0,
      maxRunners,
      ownerName: sessionOwnerName('test', pool),
    },
    timings,
  };
}

async function untilListening(handle: WorkflowHandle) {
  return eventually(async () => {
    const s = await handle.query(scaleSetStateQuery);
    return s.status === 'listening' ? s : undefined;
  }, 30_000, 'listening');
}

it('a worker killed in the middle of a long poll is replaced: the same session resumes and no message is lost or applied twice', async () => {
  const taskQueue = uniqueName('tq-ss-kill');
  const pool = uniqueName('killpool').toLowerCase();
  const child = await startWorkerProcess(taskQueue, { SIM_URL: sim.url });

  const input = listenerInput(pool, 5, { ...FAST_TIMINGS, heartbeatTimeoutMs: 1_000, scaleSetPollTimeoutMs: 8_000, scaleSetConflictRetryMs: 500 });
  const handle = await client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(pool), taskQueue, args: [input] });
  const before = await untilListening(handle);
  const polls = sim.stats().actionsCalls['get-message'] ?? 0;
  await eventually(() => (sim.stats().actionsCalls['get-message'] ?? 0) > polls, 10_000, 'a long poll in flight');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));

  // Jobs arrive while no worker listens: their messages wait in the queue.
  const jobs = [1, 2, 3].map(() => sim.queueJob({ repository: 'acme/app', labels: [pool] }).id);
  takeover = await startTestWorker({ taskQueue, activities: { github: simulatorRegistry(sim.url) } });

  const after = await eventually(async () => {
    const s = await handle.query(scaleSetStateQuery);
    const set = sim.scaleSets().find((x) => x.id === s.scaleSetId);
    return s.statistics?.totalAssignedJobs === 3 && set?.messages.pending === 0 ? { s, set } : undefined;
  }, 40_000, 'every message applied and acknowledged');
  expect(after.s.sessionId).toBe(before.sessionId);
  expect(after.s.sessionsOpened).toBe(1);
  expect(after.s.jobsAcquired).toBe(3);
  expect(after.s.desiredRunners).toBe(3);
  expect(after.s.messagesApplied).toBe(after.set.messages.deleted);
  expect(new Set(after.s.recentMessageIds).size).toBe(after.s.recentMessageIds.length);
  expect(sim.jobs().filter((j) => jobs.includes(j.id) && j.acquired)).toHaveLength(3);

  await handle.signal(stopListenerSignal, { deleteScaleSet: true });
  expect(await handle.result()).toMatchObject({ status: 'stopped' });
  expect(sim.scaleSets().some((x) => x.id === before.scaleSetId)).toBe(false);
});

it('bounds its history: the listener continues as new and carries its session, cursor and counters', async () => {
  const worker = takeover ?? (takeover = await startTestWorker({ activities: { github: simulatorRegistry(sim.url) } }));
  const pool = uniqueName('canpool').toLowerCase();
  const input: ScaleSetListenerInput = { ...listenerInput(pool, 10, { ...FAST_TIMINGS, scaleSetPollTimeoutMs: 8_000 }), historyLimit: 40 };
  const handle = await client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(pool), taskQueue: worker.taskQueue, args: [input] });
  const first = await untilListening(handle);
  // One at a time, so each job's events arrive as messages of their own (GitHub batches what arrives together).
  const jobs: number[] = [];
  for (let i = 0; i < 8; i++) {
    jobs.push(sim.queueJob({ repository: 'acme/app', labels: [pool] }).id);
    await eventually(async () => (await client.workflow.getHandle(scaleSetListenerId(pool)).query(scaleSetStateQuery)).jobsAcquired === jobs.length, 20_000, `job ${i} acquired`);
  }
  const settled = await eventually(async () => {
    const s = await client.workflow.getHandle(scaleSetListenerId(pool)).query(scaleSetStateQuery);
    const set = sim.scaleSets().find((x) => x.id === s.scaleSetId);
    return s.jobsAcquired === jobs.length && set?.messages.pending === 0 && s.messagesApplied === set.messages.deleted ? s : undefined;
  }, 40_000, 'all jobs acquired and every message acknowledged');
  const current = await client.workflow.getHandle(scaleSetListenerId(pool)).describe();
  expect(current.runId).not.toBe(handle.firstExecutionRunId);
  expect(current.historyLength).toBeLessThan(200);
  expect(settled.sessionId).toBe(first.sessionId);
  expect(settled.messagesApplied).toBeGreaterThanOrEqual(jobs.length);
  expect(new Set(settled.recentMessageIds).size).toBe(settled.recentMessageIds.length);
  await client.workflow.getHandle(scaleSetListenerId(pool)).signal(stopListenerSignal, { deleteScaleSet: true });
});

it("a worker killed in the middle of moving the scale set to the pool's new runner group: the next worker finds it moved, on the same scale set and session", async () => {
  const taskQueue = uniqueName('tq-ss-move');
  const pool = uniqueName('movepool').toLowerCase();
  const group = uniqueName('moved-to');
  sim.addRunnerGroup(group);
  const child = await startWorkerProcess(taskQueue, { SIM_URL: sim.url });
  const input = listenerInput(pool, 2, { ...FAST_TIMINGS, heartbeatTimeoutMs: 1_000, scaleSetPollTimeoutMs: 8_000, scaleSetConflictRetryMs: 500 });
  const handle = await client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(pool), taskQueue, args: [input] });
  const before = await untilListening(handle);

  // GitHub takes its time over the move, and makes it even though nobody waits for the answer.
  sim.setFault({ kind: 'latency', ms: 3_000, operation: 'update-scale-set', times: 1 });
  await handle.signal(updateListenerSignal, { minRunners: 0, maxRunners: 2, labels: [], runnerGroup: group });
  await eventually(() => (sim.stats().actionsCalls['update-scale-set'] ?? 0) > 0, 10_000, 'the move asked for');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const next = await startTestWorker({ taskQueue, activities: { github: simulatorRegistry(sim.url) } });
  try {
    const moved = await eventually(async () => {
      const s = await handle.query(scaleSetStateQuery);
      return s.runnerGroupAtGitHub === group ? s : undefined;
    }, 30_000, 'the listener knowing the scale set moved');
    expect(moved).toMatchObject({ scaleSetId: before.scaleSetId, sessionId: before.sessionId, sessionsOpened: 1 });
    expect(moved.lastError).toBeUndefined();
    // One scale set, moved. The retry may have come before GitHub finished the first PATCH and sent it again: the same change.
    expect(sim.scaleSets().filter((x) => x.name === pool)).toMatchObject([{ id: before.scaleSetId, runnerGroupName: group }]);
    await handle.signal(stopListenerSignal, { deleteScaleSet: true });
    expect(await handle.result()).toMatchObject({ status: 'stopped' });
  } finally {
    sim.clearFaults();
    await next.stop();
  }
});

it('a worker killed in the middle of renaming the scale set: the next worker finds it renamed, on the same scale set and session', async () => {
  const taskQueue = uniqueName('tq-ss-rename');
  const pool = uniqueName('renamepool').toLowerCase();
  const name = `${pool}-renamed`;
  const child = await startWorkerProcess(taskQueue, { SIM_URL: sim.url });
  const input = listenerInput(pool, 2, { ...FAST_TIMINGS, heartbeatTimeoutMs: 1_000, scaleSetPollTimeoutMs: 8_000, scaleSetConflictRetryMs: 500 });
  const handle = await client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(pool), taskQueue, args: [input] });
  const before = await untilListening(handle);
  const calls = sim.stats().actionsCalls['update-scale-set'] ?? 0;

  // GitHub takes its time over the rename, and makes it even though nobody waits for the answer.
  sim.setFault({ kind: 'latency', ms: 3_000, operation: 'update-scale-set', times: 1 });
  await handle.signal(updateListenerSignal, { minRunners: 0, maxRunners: 2, labels: [], name });
  await eventually(() => (sim.stats().actionsCalls['update-scale-set'] ?? 0) > calls, 10_000, 'the rename asked for');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const next = await startTestWorker({ taskQueue, activities: { github: simulatorRegistry(sim.url) } });
  try {
    const renamed = await eventually(async () => {
      const s = await handle.query(scaleSetStateQuery);
      return s.nameAtGitHub === name ? s : undefined;
    }, 30_000, 'the listener knowing the scale set renamed');
    expect(renamed).toMatchObject({ name, scaleSetId: before.scaleSetId, sessionId: before.sessionId, sessionsOpened: 1 });
    expect(renamed.lastError).toBeUndefined();
    // One scale set, renamed; none left under the old name.
    expect(sim.scaleSets().filter((x) => x.name === name || x.name === pool)).toMatchObject([{ id: before.scaleSetId, name }]);
    await handle.signal(stopListenerSignal, { deleteScaleSet: true });
    expect(await handle.result()).toMatchObject({ status: 'stopped' });
  } finally {
    sim.clearFaults();
    await next.stop();
  }
});
