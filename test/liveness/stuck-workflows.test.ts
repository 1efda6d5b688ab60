/**
 * A pool or runner whose history its code no longer replays fails every workflow task, on
 * every worker, for good. The machine pass resets a pool to the task that made the commands,
 * and it runs on with the signals that came after; it ends a runner, for the clean-up every
 * ended runner gets.
 */
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { nondeterminismStreak, resetPoint, writtenByTheOnlyBuild } from '../../activities/pool-repair';
import { poolSettingsSchema } from '../../domain/pool';
import { jobsQueuedSignal, poolStateQuery, updatePoolSignal } from '../../workflows/pool-messages';
import { scaleSetListenerId } from '../../workflows/scale-set-messages';
import { expectError, testApp } from '../api/support';
import { eventually, instanceInput, startTestWorker, uniqueName } from '../support/temporal';
import { instanceStartOptions } from '../../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW, runnerStatusSignal } from '../../workflows/messages';
import { counterfeitPool, nondeterminismFailed, withCounterfeitFirstTask } from './counterfeit';
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

describe('telling a stuck pool', () => {
  it('takes a pool whose last task outcome is a nondeterminism failure, and says since when', () => {
    const now = 100_000;
    // Newest first: failing since 40 s ago, a signal since.
    const stuck = [signal(190, now - 1_000), failed(185, now - 5_000), signal(184, now - 20_000), failed(181, now - 40_000), completed(157, now - 90_000)];
    expect(nondeterminismStreak(stuck)).toEqual({ cause: expect.stringMatching(/HistoryEvent\(id: 89/), sinceMs: now - 40_000 });
    // A task completed since: it got past it.
    expect(nondeterminismStreak([completed(200, now - 1_000), ...stuck])).toBeUndefined();
    // Other failures (a bug that throws, a worker gone) are not for a reset.
    expect(nondeterminismStreak([failed(185, now - 50_000, WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE)])).toBeUndefined();
    expect(nondeterminismStreak([signal(3, now)])).toBeUndefined();
  });

  it('tells the build that wrote the commands from the builds polling for tasks', () => {
    const by = (buildId?: string): HistoryEvent => ({ ...completed(87), workflowTaskCompletedEventAttributes: buildId ? { workerVersion: { buildId } } : {} }) as unknown as HistoryEvent;
    expect(writtenByTheOnlyBuild(by('b1'), [{ buildId: 'b1' }, { buildId: 'b1' }])).toBe(true);
    // A deploy under way: the new build may be what fails, and a reset would not mend it.
    expect(writtenByTheOnlyBuild(by('b1'), [{ buildId: 'b1' }, { buildId: 'b2' }])).toBe(false);
    expect(writtenByTheOnlyBuild(by('b1'), [{ buildId: 'b2' }])).toBe(false);
    // Nothing known: no build recorded, or no poller seen.
    expect(writtenByTheOnlyBuild(by(), [{ buildId: undefined }])).toBe(false);
    expect(writtenByTheOnlyBuild(by('b1'), [])).toBe(false);
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
    // Its first task made by other code: the history the real pool code meets cannot be replayed.
    const pool = await counterfeitPool(rig.client, taskQueue, settings);
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

describe('a scale-set pool stuck on a nondeterminism error', () => {
  it('is reset to the task before the event the error names, and starts its listener', async () => {
    const provider = addProvider(rig);
    const settings = poolSettingsSchema.parse({
      name: uniqueName('stuck-ss').toLowerCase().slice(0, 40),
      mode: 'scaleSet',
      github: { scope: { kind: 'org', org: 'acme' } },
      labels: ['linux'],
      provider: provider.name,
      maxRunners: 0,
    });
    const taskQueue = uniqueName('tq-stuck-ss');
    // Its first task scheduled an activity, where the real code's first task makes other commands.
    const pool = await counterfeitPool(rig.client, taskQueue, settings, { fixture: 'counterfeit-activity-workflows.ts' });
    const stuckRun = pool.firstExecutionRunId;
    const listener = rig.client.workflow.getHandle(scaleSetListenerId(settings.name));
    const worker = await startTestWorker({ taskQueue, providers: rig.providers, github: rig.github });
    try {
      // Its settings again, unchanged: a task, which the real code takes, and fails.
      await pool.signal(updatePoolSignal, { settings });
      const failure = await eventually(async () => {
        const events = (await pool.fetchHistory()).events ?? [];
        return events.find((e) => e.workflowTaskFailedEventAttributes?.cause === WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR);
      }, 20_000, 'a task failed on nondeterminism');
      const cause = failure.workflowTaskFailedEventAttributes?.failure?.message ?? '';
      expect(cause).toMatch(/does not handle HistoryEvent\(id: \d+, ActivityTaskScheduled\)/);
      const scheduled = (await pool.fetchHistory()).events!.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)!;

      const report = await eventually(async () => {
        const pass = await runLiveness(rig, { provider: provider.name, check: 'machines' });
        return pass.repaired?.length ? pass : undefined;
      }, 30_000, 'a machine pass that resets the pool');
      expect(report.repaired).toEqual([{ pool: settings.name, resetTo: Number(scheduled.eventId) - 1, cause }]);
      expect((await pool.describe()).runId).not.toBe(stuckRun);
      // The new run's first task is the real code's: it starts the listener, and the pool answers.
      await eventually(async () => ((await listener.describe().catch(() => undefined)) ? true : undefined), 20_000, 'the listener started');
      expect((await pool.query(poolStateQuery)).settingsVersion).toBe(2);
      expect((await runLiveness(rig, { provider: provider.name, check: 'machines' })).repaired).toEqual([]);
    } finally {
      await pool.terminate('test done').catch(() => undefined);
      await listener.terminate('test done').catch(() => undefined);
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
