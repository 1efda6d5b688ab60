/**
 * A runner's reports reach its pool through failures: a runner's last report, "deleted", is
 * the only thing that frees its place before the pool's look for ended runners (ten minutes).
 *
 * Reports are numbered in the runner's workflow code and sent from local activities, which run
 * before the workflow task that sends them is recorded. A worker that dies between the two
 * leaves a report at the pool that the retried task never made: the retry numbers its own
 * reports from the same point, and may say something else under the same number.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection, WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPoolActivities, type ReportToPoolArgs } from '../../activities/pool-activities';
import { FakeProviderControl } from '../../providers/fake';
import { jobCompletedSignal, jobStartedSignal, runnerWorkflowId } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery, type PoolView, type RunnersChangedArgs } from '../../workflows/pool-messages';
import type { runnerPool } from '../../workflows/runner-pool';
import { connectClient, eventually, FAST_TIMINGS, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { startWorkerProcess } from '../support/worker-child';
import { autoRegister, idleRunners, poolSettings, startPool } from './helpers';

let client: Client;
let connection: Connection;
let child: ChildProcess | undefined;
let takeover: TestWorker | undefined;
let flaky: TestWorker | undefined;
let mute: TestWorker | undefined;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await takeover?.stop();
  await flaky?.stop();
  await mute?.stop();
  await connection?.close();
});

/** The reports the pool took for one runner, in the order its history holds them. */
async function reportsHeard(poolId: string, runner: string): Promise<{ seq: number; status: string }[]> {
  const history = await client.workflow.getHandle(poolId).fetchHistory();
  const heard: { seq: number; status: string }[] = [];
  for (const event of history.events ?? []) {
    const signal = event.workflowExecutionSignaledEventAttributes;
    if (signal?.signalName !== 'runnersChanged') continue;
    const payload = signal.input?.payloads?.[0]?.data;
    if (!payload) continue;
    const { reports } = JSON.parse(Buffer.from(payload).toString()) as RunnersChangedArgs;
    for (const r of reports) if (r.name === runner) heard.push({ seq: r.seq, status: r.status });
  }
  return heard;
}

/**
 * A pool of one runner, idle. Its look for ended runners is ten minutes off: only the runner's
 * reports can tell it the runner is gone.
 */
async function poolWithOneIdleRunner(taskQueue: string, timings: Partial<typeof FAST_TIMINGS> = {}) {
  const settings = poolSettings({ minIdleRunners: 1, maxRunners: 1 });
  const pool = await startPool(client, taskQueue, { settings, timings: { ...FAST_TIMINGS, poolAuditIntervalMs: 10 * 60_000, ...timings } });
  const agents = autoRegister(client, pool);
  const [runner] = await eventually(async () => {
    const idle = idleRunners(await pool.query(poolStateQuery));
    return idle.length === 1 ? idle : undefined;
  }, 30_000, 'one idle runner');
  agents.stop();
  return { pool, runner: runner! };
}

/** Waits until the pool no longer counts `runner` and has put a new one in its one place. */
function replaced(pool: WorkflowHandle<typeof runnerPool>, runner: string): Promise<PoolView> {
  return eventually(async () => {
    const v = await pool.query(poolStateQuery);
    return v.runners.length === 1 && !v.runners.some((r) => r.name === runner) ? v : undefined;
  }, 30_000, 'the runner dropped and replaced');
}

it('a pool hears the runner gone when the worker died after its "deleting" report and the retry said "deleted" under the same number', async () => {
  const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-retried-'));
  const fake = new FakeProviderControl(fakeDir);
  const taskQueue = uniqueName('tq-retried');
  // The first worker deletes inline, and dies the moment its "deleting" report has reached the pool.
  child = await startWorkerProcess(taskQueue, { FAKE_DIR: fakeDir, FAKE_INLINE_MS: '2000', DIE_AFTER_REPORT: 'deleting' });
  const exited = new Promise((r) => child!.once('exit', r));

  const { pool, runner } = await poolWithOneIdleRunner(taskQueue);

  // Its first delete fails, so the first attempt says "deleting"; the retry's delete goes through.
  fake.setFault('delete', { failTimes: 1, instance: runner });
  const handle = client.workflow.getHandle(runnerWorkflowId(runner));
  await handle.signal(jobStartedSignal, { jobId: 7 });
  await handle.signal(jobCompletedSignal, { jobId: 7, conclusion: 'success' });
  await exited;

  takeover = await startTestWorker({ taskQueue, fakeDir, fakeInlineMs: 2_000 });
  const final = (await handle.result()) as { status: string };
  expect(final.status).toBe('deleted');
  expect(fake.instance(runner)).toBeUndefined();

  // The pool took both reports under one number, and no longer counts the runner: its one slot
  // goes to a new runner.
  const view = await replaced(pool, runner);
  expect(view.runners[0]!.name).not.toBe(runner);
  const heard = await reportsHeard(pool.workflowId, runner);
  const last = heard.at(-1)!;
  expect(last.status).toBe('deleted');
  // Under that one number the pool heard "deleting" first. (A worker slow enough to take both of
  // the job's signals in one task sends the busy report again from the retried task, just before
  // "deleted": so the two need not be the last two reports.)
  expect(heard.filter((r) => r.seq === last.seq).map((r) => r.status)).toEqual(['deleting', 'deleted']);

  await pool.signal(deletePoolSignal, {});
  await pool.result();
});

it('a runner tells its pool it is gone through seconds in which the server cannot be reached', async () => {
  // The worker's signals to the pool fail for about six seconds (a server restarting), and
  // only for the runner's last report, so nothing else can tell the pool.
  const reports = createPoolActivities({ client });
  let refused = 0;
  flaky = await startTestWorker({
    extraActivities: {
      async reportToPool(args: ReportToPoolArgs): Promise<void> {
        if (args.report.status === 'deleted' && refused < 6) {
          refused += 1;
          throw new Error('14 UNAVAILABLE: connection refused (the server restarting)');
        }
        await reports.reportToPool(args);
      },
    },
  });
  const { pool, runner } = await poolWithOneIdleRunner(flaky.taskQueue);

  const handle = client.workflow.getHandle(runnerWorkflowId(runner));
  await handle.signal(jobStartedSignal, { jobId: 8 });
  await handle.signal(jobCompletedSignal, { jobId: 8, conclusion: 'success' });
  await replaced(pool, runner);
  expect(refused).toBe(6);
  expect(((await handle.result()) as { status: string }).status).toBe('deleted');

  await pool.signal(deletePoolSignal, {});
  await pool.result();
});

it('a pool that never hears a leaving runner\'s last report looks for it well before its interval', async () => {
  // The runner's "deleted" is given up (a server out of reach for longer than the report is
  // tried): the pool last heard "deleting".
  const reports = createPoolActivities({ client });
  const given: string[] = [];
  mute = await startTestWorker({
    extraActivities: {
      async reportToPool(args: ReportToPoolArgs): Promise<void> {
        if (args.report.status === 'deleted') given.push(args.report.name);
        else await reports.reportToPool(args);
      },
    },
  });
  const { pool, runner } = await poolWithOneIdleRunner(mute.taskQueue, { leaveReaskIntervalMs: 1_000 });
  const handle = client.workflow.getHandle(runnerWorkflowId(runner));
  await handle.signal(jobStartedSignal, { jobId: 9 });
  await handle.signal(jobCompletedSignal, { jobId: 9, conclusion: 'success' });
  expect(((await handle.result()) as { status: string }).status).toBe('deleted');
  expect(given).toContain(runner);

  // Its interval is ten minutes; a second or two after the runner went silent, it looks.
  await replaced(pool, runner);
  const history = await pool.fetchHistory();
  const looks = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'findEndedRunners');
  expect(looks.length).toBeGreaterThanOrEqual(1);
  await pool.signal(deletePoolSignal, {});
  await pool.result();
});
