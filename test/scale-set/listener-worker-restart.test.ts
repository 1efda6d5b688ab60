import type { Client, Connection } from '@temporalio/client';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { sessionOwnerName } from '../../domain/scale-set';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';
import { SCALE_SET_LISTENER_WORKFLOW, scaleSetListenerId, scaleSetStateQuery, stopListenerSignal, type ScaleSetListenerInput } from '../../workflows/scale-set-messages';
import { connectClient, eventually, FAST_TIMINGS, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { simulatorRegistry } from './support/simulator-registry';

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

it('a worker killed in the middle of a long poll is replaced: the same session resumes and no message is lost or applied twice', async () => {
  const taskQueue = uniqueName('tq-ss-kill');
  const pool = uniqueName('killpool').toLowerCase();
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'support/listener-worker.ts')], {
    env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TASK_QUEUE: taskQueue, SIM_URL: sim.url, BUNDLE_PATH: inject('workflowBundlePath') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ready, fail) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && ready());
    child.once('exit', (code) => fail(new Error(`worker process exited early (${code})`)));
  });

  const input: ScaleSetListenerInput = {
    settings: {
      pool,
      target: { credentials: 'default', scope: { kind: 'org', org: 'acme' } },
      name: pool,
      runnerGroup: 'Default',
      labels: [],
      minRunners: 0,
      maxRunners: 5,
      ownerName: sessionOwnerName('test', pool),
    },
    timings: { ...FAST_TIMINGS, heartbeatTimeoutMs: 1_000, scaleSetPollTimeoutMs: 8_000, scaleSetConflictRetryMs: 500 },
  };
  const handle = await client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(pool), taskQueue, args: [input] });
  const before = await eventually(async () => {
    const s = await handle.query(scaleSetStateQuery);
    return s.status === 'listening' ? s : undefined;
  }, 30_000, 'listening');
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
