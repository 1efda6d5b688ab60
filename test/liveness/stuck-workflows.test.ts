/**
 * A pool or runner whose history its code no longer replays fails every workflow task, on
 * every worker, for good. The machine pass resets a pool to the task that made the commands,
 * and it runs on with the signals that came after; it ends a runner, for the clean-up every
 * ended runner gets.
 */
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { resetPoint, stuckOnNondeterminism } from '../../activities/pool-repair';
import { poolSettingsSchema } from '../../domain/pool';
import { poolMemoOf } from '../../workflows/pool-memo';
import { jobsQueuedSignal, poolStateQuery, poolWorkflowId, RUNNER_POOL_WORKFLOW, type RunnerPoolInput } from '../../workflows/pool-messages';
import { RUNNER_POOL } from '../../workflows/search-attributes';
import { expectError, testApp } from '../api/support';
import { eventually, FAST_TIMINGS, instanceInput, startTestWorker, temporalAddress, uniqueName } from '../support/temporal';
import { instanceStartOptions } from '../../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW, runnerStatusSignal } from '../../workflows/messages';
import { addProvider, runLiveness, useLivenessRig } from './helpers';

const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const STUCK_AFTER_MS = 1_000;
const rig = useLivenessRig({ stuckPoolAfterMs: STUCK_AFTER_MS });

const at = (ms: number) => ({ seconds: Math.floor(ms / 1_000), nanos: (ms % 1_000) * 1e6 });
const completed = (id: number, ms = 0): HistoryEvent => ({ eventId: id, eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, eventTime: at(ms) }) as unknown as HistoryEvent;
const signal = (id: number, ms = 0): HistoryEvent => ({ eventId: id, eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, eventTime: at(ms) }) as unknown as HistoryEvent;
const failed = (id: number, ms: number, cause = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR): HistoryEvent =>
  ({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    eventTime: at(ms),
    workflowTaskFailedEventAttributes: { cause, failure: { message: '[TMPRL1100] Nondeterminism error: No command scheduled for event HistoryEvent(id: 89, ActivityTaskScheduled)' } },
  }) as unknown as HistoryEvent;

/** Starts a workflow whose first task a counterfeit of its type makes, on a worker stopped once it has. */
async function withCounterfeitFirstTask<H extends WorkflowHandle>(taskQueue: string, start: () => Promise<H>): Promise<H> {
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const counterfeit = await Worker.create({ connection, taskQueue, workflowsPath: fileURLToPath(new URL('./fixtures/counterfeit-workflows.ts', import.meta.url)) });
  const running = counterfeit.run();
  try {
    const handle = await start();
    await eventually(async () => (await handle.fetchHistory()).events?.some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED), 20_000, 'the counterfeit first task');
    return handle;
  } finally {
    counterfeit.shutdown();
    await running;
    await connection.close();
  }
}

const nondeterminismFailed = async (handle: WorkflowHandle): Promise<boolean> =>
  (await handle.fetchHistory()).events?.some((e) => e.workflowTaskFailedEventAttributes?.cause === WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR) ?? false;

describe('telling a stuck pool', () => {
  it('takes a pool whose last task outcome is a nondeterminism failure, once the failures have lasted long enough', () => {
    const now = 100_000;
    // Newest first: failing since 40 s ago, a signal since.
    const stuck = [signal(190, now - 1_000), failed(185, now - 5_000), signal(184, now - 20_000), failed(181, now - 40_000), completed(157, now - 90_000)];
    expect(stuckOnNondeterminism(stuck, now, 30_000)).toMatch(/HistoryEvent\(id: 89/);
    expect(stuckOnNondeterminism(stuck, now, 60_000)).toBeUndefined();
    // A task completed since: it got past it.
    expect(stuckOnNondeterminism([completed(200, now - 1_000), ...stuck], now, 30_000)).toBeUndefined();
    // Other failures (a bug that throws, a worker gone) are not for a reset.
    expect(stuckOnNondeterminism([failed(185, now - 50_000, WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE)], now, 30_000)).toBeUndefined();
    expect(stuckOnNondeterminism([signal(3, now)], now, 0)).toBeUndefined();
  });

  it('resets to the task that made the event the error names, else to the last task completed', () => {
    const history = [completed(4), completed(79), completed(87), signal(88), completed(94), failed(177, 0)];
    expect(resetPoint(history, 'No command scheduled for event HistoryEvent(id: 89, ActivityTaskScheduled)')?.eventId).toBe(87);
    const otherCommand =
      '[TMPRL1100] Nondeterminism error: Child workflow machine does not handle this event: HistoryEvent { event_id: 89, event_time: Some(Timestamp { seconds: 1795935107, nanos: 603275548 }), event_type: ActivityTaskScheduled, version: 0 }';
    expect(resetPoint(history, otherCommand)?.eventId).toBe(87);
    expect(resetPoint(history, 'Nondeterminism error: something else')?.eventId).toBe(94);
    expect(resetPoint([signal(2)], 'HistoryEvent(id: 2, Signaled)')).toBeUndefined();
  });
});

describe('a pool stuck on a nondeterminism error', () => {
  it('is reset by the machine pass and runs on with the signals that came after', async () => {
    const provider = addProvider(rig);
    const settings = poolSettingsSchema.parse({
      name: uniqueName('stuck').toLowerCase().slice(0, 40),
      github: { scope: { kind: 'repo', owner: 'acme', repo: 'widgets' } },
      labels: ['linux', 'stuck'],
      provider: provider.name,
      maxRunners: 0,
    });
    const taskQueue = uniqueName('tq-stuck');
    const input: RunnerPoolInput = { settings, timings: FAST_TIMINGS };

    // Its first task made by other code: the history the real pool code meets cannot be replayed.
    const pool = await withCounterfeitFirstTask(taskQueue, () =>
      rig.client.workflow.start(RUNNER_POOL_WORKFLOW, {
        taskQueue,
        workflowId: poolWorkflowId(settings.name),
        args: [input],
        memo: { ...poolMemoOf(settings) },
        typedSearchAttributes: [{ key: RUNNER_POOL, value: settings.name }],
      }),
    );
    const stuckRun = pool.firstExecutionRunId;

    const worker = await startTestWorker({ taskQueue, providers: rig.providers, github: rig.github });
    try {
      // A job comes: the real code takes the task, and fails it.
      await pool.signal(jobsQueuedSignal, { jobs: [{ jobId: 424242, labels: ['linux', 'stuck'], repository: 'acme/widgets' }] });
      await eventually(() => nondeterminismFailed(pool), 20_000, 'a task failed on nondeterminism');

      // Meanwhile the API says what is wrong: once the server gives up waiting on the failing tasks, it says so.
      const api = testApp(rig.client, taskQueue);
      const seen: number[] = [];
      const failing = await eventually(async () => {
        const answer = await api.call('GET', `/api/v1/pools/${settings.name}`);
        seen.push(answer.status);
        return answer.status === 503 ? answer : undefined;
      }, 30_000, "the API to say the pool's tasks are failing");
      expect((await expectError(failing, 503, 'workflow_task_failing')).message).toMatch(/tasks are failing.*nondeterminism error is reset/);
      expect(seen.filter((status) => status !== 503 && status !== 504)).toEqual([]);

      const report = await eventually(async () => {
        const pass = await runLiveness(rig, { provider: provider.name, check: 'machines' });
        return pass.repaired?.length ? pass : undefined;
      }, 30_000, 'a machine pass that resets the pool');
      expect(report.repaired).toEqual([{ pool: settings.name, resetTo: expect.any(Number), cause: expect.stringContaining('Nondeterminism') }]);
      expect(report.failed).toEqual([]);

      // A new run, which replays, decides, and has the job that came while the old one was stuck.
      const description = await pool.describe();
      expect(description.runId).not.toBe(stuckRun);
      const view = await eventually(async () => {
        const state = await pool.query(poolStateQuery);
        return state.queuedJobCount === 1 ? state : undefined;
      }, 20_000, 'the reset pool to answer with the job');
      expect(view.queuedJobs.map((j) => j.jobId)).toEqual([424242]);
      // Healthy now: the next pass finds nothing to reset.
      expect((await runLiveness(rig, { provider: provider.name, check: 'machines' })).repaired).toEqual([]);
    } finally {
      await pool.terminate('test done').catch(() => undefined);
      await worker.stop();
    }
  });
});

describe('a runner workflow stuck on a nondeterminism error', () => {
  it('is terminated by the machine pass once the server reports it, for the clean-up of ended runners', async () => {
    const provider = addProvider(rig);
    const taskQueue = uniqueName('tq-stuck-runner');
    const name = uniqueName('stuck-runner');
    const runner = await withCounterfeitFirstTask(taskQueue, () =>
      rig.client.workflow.start(RUNNER_INSTANCE_WORKFLOW, {
        taskQueue,
        ...instanceStartOptions(instanceInput(name, { provider: provider.name })),
      }),
    );
    const worker = await startTestWorker({ taskQueue, providers: rig.providers, github: rig.github });
    try {
      // Its agent reports: the real code takes the task, and fails it, again and again.
      await runner.signal(runnerStatusSignal, { status: 'idle' });
      await eventually(() => nondeterminismFailed(runner), 20_000, 'a task failed on nondeterminism');

      const report = await eventually(async () => {
        const pass = await runLiveness(rig, { provider: provider.name, check: 'machines' });
        return pass.stuckRunnersEnded?.length ? pass : undefined;
      }, 40_000, 'a machine pass that ends the runner');
      expect(report.stuckRunnersEnded).toEqual([{ name }]);
      expect((await runner.describe()).status.name).toBe('TERMINATED');
    } finally {
      await runner.terminate('test done').catch(() => undefined);
      await worker.stop();
    }
  });
});
