/**
 * The Temporal-backed job sink and the webhook route in front of it. Pools and
 * runners are started without a worker; their histories show what was sent.
 */
import { createHmac } from 'node:crypto';
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolDirectory } from '../../api/pool-directory';
import { TemporalJobSink } from '../../api/temporal-job-sink';
import { RUNNER_POOL } from '../../workflows/search-attributes';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../../workflows/messages';
import { RUNNER_POOL_WORKFLOW, unmatchedJobsWorkflowId, poolWorkflowId, type PoolGlance } from '../../workflows/pool-messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { poolSettingsSchema } from '../../domain/pool';
import { resolveTimings } from '../../domain/timings';
import { connectClient, eventually, instanceInput, uniqueName } from '../support/temporal';
import { signalsOf } from './history';
import { WEBHOOK_SECRET, recordingLogger, testApp, validPool, type TestApp } from './support';

let connection: Connection;
let client: Client;
let api: TestApp;
let taskQueue: string;
let sink: TemporalJobSink;
let jobIds = Math.floor(Date.now() / 1000) * 1000;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  taskQueue = uniqueName('api-sink');
  api = testApp(client, taskQueue);
  sink = new TemporalJobSink({ client, taskQueue, pools: new PoolDirectory(client, 0), logger: recordingLogger(), queryTimeoutMs: 500 });
});

afterAll(async () => {
  await connection.close();
});

async function createPool(labels: string[], overrides: Record<string, unknown> = {}): Promise<string> {
  const name = uniqueName('pool').toLowerCase().slice(0, 60);
  const response = await api.call('POST', '/api/v1/pools', { body: validPool(name, { labels, ...overrides }) });
  expect(response.status).toBe(201);
  // Routing reads visibility, which lags the start a little.
  await eventually(async () => (await new PoolDirectory(client, 0).fetch()).some((p) => p.name === name && p.memo), 20_000, `pool ${name} visible`);
  return name;
}

/** The intake batches queued jobs per pool: one `jobsQueued` signal may carry several. */
const jobQueuedSignals = async (pool: string) => (await signalsOf(client, poolWorkflowId(pool))).filter((s) => s.name === 'jobsQueued');

describe('jobQueued', () => {
  it('goes to the enabled matching pool of the highest priority', async () => {
    const label = uniqueName('lbl');
    const low = await createPool([label], { priority: 1 });
    const high = await createPool([label, 'GPU'], { priority: 5 });
    const off = await createPool([label], { priority: 9, enabled: false });
    const other = await createPool([uniqueName('elsewhere')], { priority: 10 });
    const jobId = ++jobIds;
    await sink.jobQueued({ jobId, labels: ['self-hosted', label.toUpperCase(), 'gpu'], repository: 'acme/widgets', deliveryId: 'd-1' });
    expect(await jobQueuedSignals(high)).toEqual([{ name: 'jobsQueued', input: { jobs: [{ jobId, labels: ['self-hosted', label.toUpperCase(), 'gpu'], repository: 'acme/widgets' }] } }]);
    for (const pool of [low, off, other]) expect(await jobQueuedSignals(pool)).toEqual([]);
  });

  it('is recorded as unmatched, with the reason, when no enabled pool matches', async () => {
    const label = uniqueName('lbl');
    const off = await createPool([label], { enabled: false });
    const noMatch = ++jobIds;
    const disabled = ++jobIds;
    await sink.jobQueued({ jobId: noMatch, labels: [uniqueName('nobody-has-this')], deliveryId: 'd-2' });
    await sink.jobQueued({ jobId: disabled, labels: [label], deliveryId: 'd-3' });
    const recorded = (await signalsOf(client, unmatchedJobsWorkflowId(taskQueue)))
      .filter((s) => s.name === 'jobsUnmatched')
      .flatMap((s) => (s.input as { jobs: { jobId: number; reason: string }[] }).jobs);
    expect(recorded.find((j) => j.jobId === noMatch)?.reason).toMatch(/^no pool has the labels/);
    expect(recorded.find((j) => j.jobId === disabled)?.reason).toContain(`disabled: ${off}`);
    expect(await jobQueuedSignals(off)).toEqual([]);
  });

  it('reaches a pool created elsewhere since its pool list was read, by reading the list afresh', async () => {
    // A long-lived list, read before the pool exists: as in an API process that did not create the pool.
    const pools = new PoolDirectory(client, 60_000);
    const longLived = new TemporalJobSink({ client, taskQueue, pools, logger: recordingLogger(), queryTimeoutMs: 500 });
    const label = uniqueName('lbl');
    expect((await pools.list()).some((p) => p.memo?.labels.includes(label))).toBe(false);
    const pool = await createPool([label]);
    const jobId = ++jobIds;
    await longLived.jobQueued({ jobId, labels: [label], deliveryId: 'd-fresh' });
    expect(await jobQueuedSignals(pool)).toEqual([{ name: 'jobsQueued', input: { jobs: [{ jobId, labels: [label] }] } }]);
  });
});

describe('jobQueued to pools of equal priority', () => {
  /** A pool of three runners at most whose memo carries this glance; no worker runs it, so it answers no query. */
  async function poolWithGlance(name: string, label: string, glance: PoolGlance): Promise<string> {
    const settings = poolSettingsSchema.parse(validPool(name, { labels: [label] }));
    await client.workflow.start(RUNNER_POOL_WORKFLOW, {
      taskQueue,
      workflowId: poolWorkflowId(name),
      args: [{ settings, timings: resolveTimings({}) }],
      typedSearchAttributes: [{ key: RUNNER_POOL, value: name }],
      memo: { ...poolMemoOf(settings), glance },
    });
    return name;
  }
  const glanceOf = (busy: number, queuedJobs: number): PoolGlance => ({
    counts: { alive: busy, idle: 0, busy, starting: 0, leaving: 0 },
    statuses: busy > 0 ? { running: busy } : {},
    agents: busy > 0 ? { active: busy } : {},
    queuedJobs,
    desired: busy + queuedJobs,
    minIdleRunners: 0,
    at: Date.now(),
  });
  const jobsOf = async (pool: string): Promise<number[]> =>
    (await jobQueuedSignals(pool)).flatMap((s) => (s.input as { jobs: { jobId: number }[] }).jobs.map((j) => j.jobId));

  it('go to the one whose glance shows the most room, less the jobs routed to it since, without asking either', async () => {
    const label = uniqueName('tie');
    const base = uniqueName('tie').toLowerCase().slice(0, 40);
    // Listed first, so the one a tie (or knowing nothing) goes to: full, three runners busy.
    const full = await poolWithGlance(`${base}-a`, label, glanceOf(3, 0));
    const empty = await poolWithGlance(`${base}-b`, label, glanceOf(0, 1));
    await eventually(async () => ((await new PoolDirectory(client, 0).fetch()).filter((p) => p.memo?.glance && p.memo.labels.includes(label)).length === 2 ? true : undefined), 20_000, 'both pools listed with their glance');
    const jobs = [++jobIds, ++jobIds, ++jobIds];
    for (const jobId of jobs) await sink.jobQueued({ jobId, labels: [label], deliveryId: `d-tie-${jobId}` });
    // Room for three, one job waiting: two jobs take its room, and the third ties at none and goes to the first.
    // Asked instead, neither pool would answer (no worker runs them), and every job would go to the first.
    expect(await jobsOf(empty)).toEqual(jobs.slice(0, 2));
    expect(await jobsOf(full)).toEqual(jobs.slice(2));
  });
});

describe('jobStarted / jobCompleted', () => {
  async function startRunner(pool: string): Promise<string> {
    const name = uniqueName('runner');
    await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, {
      workflowId: runnerWorkflowId(name),
      taskQueue,
      args: [instanceInput(name, { pool })],
      typedSearchAttributes: [{ key: RUNNER_POOL, value: pool }],
    });
    return name;
  }

  it('signal the runner only: the runner reports the job to its pool itself', async () => {
    const pool = await createPool([uniqueName('lbl')]);
    const runner = await startRunner(pool);
    const jobId = ++jobIds;
    expect(await sink.jobStarted(runner, { jobId, runId: 9 })).toBe('signalled');
    expect(await sink.jobCompleted(runner, { jobId, conclusion: 'success' })).toBe('signalled');
    expect(await signalsOf(client, runnerWorkflowId(runner))).toEqual([
      { name: 'jobStarted', input: { jobId, runId: 9 } },
      { name: 'jobCompleted', input: { jobId, conclusion: 'success' } },
    ]);
    expect(await signalsOf(client, poolWorkflowId(pool))).toEqual([]);
  });

  it('answer not_owned for a runner that is not ours or has ended', async () => {
    expect(await sink.jobStarted(uniqueName('github-hosted'), { jobId: ++jobIds })).toBe('not_owned');
    const runner = await startRunner(uniqueName('gone-pool'));
    await client.workflow.getHandle(runnerWorkflowId(runner)).terminate('ended for the test');
    expect(await sink.jobCompleted(runner, { jobId: ++jobIds })).toBe('not_owned');
  });
});

describe('jobTaken', () => {
  const progressSignals = async (pool: string) => (await signalsOf(client, poolWorkflowId(pool))).filter((s) => s.name === 'jobProgress');

  it('tells every pool the labels match that a runner took the job, when more than one could hold it', async () => {
    const label = uniqueName('lbl');
    const routedHere = await createPool([label]);
    const tookIt = await createPool([label, 'gpu']);
    const jobId = ++jobIds;
    const runnerName = `${tookIt}-0123456789`;
    await sink.jobTaken({ jobId, labels: [label], repository: 'acme/widgets', runnerName, ownRunner: true, action: 'in_progress' });
    for (const pool of [routedHere, tookIt]) expect(await progressSignals(pool)).toEqual([{ name: 'jobProgress', input: { jobId, action: 'in_progress', runnerName } }]);
  });

  it('tells the one pool the labels match when a runner runnerflow does not manage took the job', async () => {
    const label = uniqueName('lbl');
    const pool = await createPool([label]);
    const jobId = ++jobIds;
    await sink.jobTaken({ jobId, labels: [label], runnerName: 'someone-elses-runner', ownRunner: false, action: 'completed' });
    expect(await progressSignals(pool)).toEqual([{ name: 'jobProgress', input: { jobId, action: 'completed' } }]);
  });

  it('sends nothing when the one matching pool is the one whose runner took the job: the runner tells it', async () => {
    const label = uniqueName('lbl');
    const pool = await createPool([label]);
    await sink.jobTaken({ jobId: ++jobIds, labels: [label], runnerName: `${pool}-0123456789`, ownRunner: true, action: 'in_progress' });
    expect(await progressSignals(pool)).toEqual([]);
  });
});

describe('jobLeftQueue', () => {
  it('tells the matching pools that a cancelled job no longer waits', async () => {
    const label = uniqueName('lbl');
    const pool = await createPool([label]);
    const jobId = ++jobIds;
    await sink.jobLeftQueue({ jobId, labels: [label], deliveryId: 'd-4' });
    expect(await signalsOf(client, poolWorkflowId(pool))).toEqual([{ name: 'jobProgress', input: { jobId, action: 'completed' } }]);
  });
});

describe('POST /webhooks/github', () => {
  function delivery(payload: unknown, secret = WEBHOOK_SECRET) {
    const raw = JSON.stringify(payload);
    const signature = `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
    return api.call('POST', '/webhooks/github', {
      token: null,
      raw,
      headers: { 'x-github-event': 'workflow_job', 'x-github-delivery': uniqueName('delivery'), 'x-hub-signature-256': signature },
    });
  }

  it('routes a signed queued job to its pool without an admin token', async () => {
    const label = uniqueName('lbl');
    const pool = await createPool([label]);
    const jobId = ++jobIds;
    const response = await delivery({ action: 'queued', workflow_job: { id: jobId, run_id: 5, labels: ['self-hosted', label] }, repository: { full_name: 'acme/widgets' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ result: 'queued' });
    expect(await jobQueuedSignals(pool)).toEqual([{ name: 'jobsQueued', input: { jobs: [expect.objectContaining({ jobId, runId: 5, repository: 'acme/widgets' })] } }]);
  });

  it('tells the other pool with the labels when a runner it does not own takes a job', async () => {
    const label = uniqueName('lbl');
    const pool = await createPool([label]);
    const jobId = ++jobIds;
    const response = await delivery({ action: 'in_progress', workflow_job: { id: jobId, run_id: 5, labels: [label], runner_name: 'a-runner-of-another-manager' }, repository: { full_name: 'acme/widgets' } });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ result: 'not_owned' });
    expect((await signalsOf(client, poolWorkflowId(pool))).filter((s) => s.name === 'jobProgress')).toEqual([
      { name: 'jobProgress', input: { jobId, action: 'in_progress', runnerName: 'a-runner-of-another-manager' } },
    ]);
  });

  it("lists and routes to this installation's pools only, not another's sharing the namespace", async () => {
    const label = uniqueName('lbl');
    const mine = await createPool([label], { priority: 1 });
    // Another installation (another task queue, its workers down) with a pool that would win: more priority.
    const other = testApp(client, uniqueName('other-installation'));
    const theirs = uniqueName('theirs').toLowerCase().slice(0, 60);
    expect((await other.call('POST', '/api/v1/pools', { body: validPool(theirs, { labels: [label], priority: 9 }) })).status).toBe(201);
    await eventually(async () => (await new PoolDirectory(client, 0).fetch()).some((p) => p.name === theirs && p.memo), 20_000, `pool ${theirs} visible`);

    const { pools } = (await (await api.call('GET', '/api/v1/pools')).json()) as { pools: { name: string }[] };
    expect(pools.map((p) => p.name)).toContain(mine);
    expect(pools.map((p) => p.name)).not.toContain(theirs);
    const jobId = ++jobIds;
    const response = await delivery({ action: 'queued', workflow_job: { id: jobId, run_id: 5, labels: ['self-hosted', label] }, repository: { full_name: 'acme/widgets' } });
    expect(response.status).toBe(200);
    expect(await jobQueuedSignals(mine)).toEqual([{ name: 'jobsQueued', input: { jobs: [expect.objectContaining({ jobId })] } }]);
    expect(await jobQueuedSignals(theirs)).toEqual([]);
    await client.workflow.getHandle(poolWorkflowId(theirs)).terminate('test done');
  });

  it('refuses a delivery signed with another secret', async () => {
    const response = await delivery({ action: 'queued', workflow_job: { id: ++jobIds, labels: [] } }, 'wrong-secret');
    expect(response.status).toBe(401);
  });
});
