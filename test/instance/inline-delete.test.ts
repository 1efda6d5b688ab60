/**
 * A provider that deletes quickly gets the first graceful delete attempt inline:
 * an ephemeral runner whose job is done closes in the workflow task that heard
 * so, with no activity task on the server. Slow, failing and forced cases fall
 * back to what the ordinary activity guarantees: the machine is deleted in the end.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { ReportToPoolArgs } from '../../activities/pool-activities';
import { isLeaving } from '../../domain/instance-status';
import { FakeProvider, type FakeFaultPlan } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { forceDeleteSignal, jobCompletedSignal, jobStartedSignal, runnerStatusSignal } from '../../workflows/messages';
import { eventually, FAST_TIMINGS, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { EventType, eventsOf, scheduledActivities, startInstance, waitForStatus, withFault } from './helpers';
import { activitySteps } from '../support/replay';

const INLINE_BOUND_MS = 600;
const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-inline-delete-'));
const quick: ProviderPort = Object.assign(new FakeProvider({ name: 'fake', stateDir: fakeDir }), { inlineCreateTimeoutMs: INLINE_BOUND_MS, inlineDeleteTimeoutMs: INLINE_BOUND_MS });
/** What runners told their pool, in the order they told it, and when (a stand-in for the report's signal). */
const poolReports: (ReportToPoolArgs & { at: number })[] = [];
/** Runners whose next "deleted" report the pool's stand-in refuses, as a pool out of reach would. */
const refuseNextGoneReport = new Set<string>();
/** The worker's configured providers, read at each call: a test can take one out of the configuration. */
const providers = new Map<string, ProviderPort>([['fake', quick]]);
const env = useTestWorker({
  fakeDir,
  providers,
  extraActivities: {
    reportToPool: async (args: ReportToPoolArgs) => {
      if (args.report.status === 'deleted' && refuseNextGoneReport.delete(args.report.name)) throw new Error('pool out of reach');
      poolReports.push({ ...args, at: Date.now() });
    },
  },
});

/** The phases a runner reported to its pool, as the pool reads them. */
function phasesReported(name: string): string[] {
  return poolReports
    .filter((r) => r.report.name === name)
    .map(({ report }) => (report.status === 'deleted' ? 'deleted' : isLeaving(report.status, report.runnerStatus) ? 'leaving' : report.runnerStatus === 'active' ? 'busy' : report.runnerStatus));
}

/** Waits up to 10 s for the runner to report a phase. */
async function untilReported(name: string, phase: string): Promise<void> {
  await eventually(() => (phasesReported(name).includes(phase) ? true : undefined), 10_000, `the ${phase} report`);
}

/** When the runner's first report of a phase reached the pool's stand-in. */
function reportedAt(name: string, phase: string): number {
  const i = phasesReported(name).indexOf(phase);
  return poolReports.filter((r) => r.report.name === name)[i]!.at;
}

/** The local and ordinary activities the runner ran from its job's end to its close. */
async function stepsAfterJobCompleted(handle: WorkflowHandle): Promise<string[]> {
  const events = await eventsOf(handle);
  const completedAt = Number(events.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'jobCompleted')!.eventId);
  return activitySteps(events)
    .filter((s) => s.eventId > completedAt)
    .map((s) => s.type);
}

/** Workflow tasks the runner took from the one that heard its job completed to its close. */
async function tasksAfterJobCompleted(handle: WorkflowHandle): Promise<number> {
  const events = await eventsOf(handle);
  const completedAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'jobCompleted');
  return events.slice(completedAt).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length;
}

/** Starts an ephemeral runner and takes it through one job, so that it leaves. */
async function runOneJob(name: string, options: { notifyPool?: boolean; provider?: string; beforeJobEnds?: () => void } = {}): Promise<WorkflowHandle> {
  const overrides = { ...(options.notifyPool ? { notifyPool: true, pool: uniqueName('told-pool') } : {}), ...(options.provider ? { provider: options.provider } : {}) };
  const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, overrides));
  await waitForStatus(handle, 'running');
  await handle.signal(runnerStatusSignal, { status: 'idle' });
  // Heard in one task, "idle" and "busy" would go to the pool as one report: these tests pin
  // the reports of separate tasks (the next describe, those of one).
  if (options.notifyPool) await untilReported(name, 'idle');
  await handle.signal(jobStartedSignal, { jobId: 7 });
  // The busy report is out before the job ends, so what follows is the job's end alone.
  if (options.notifyPool) await untilReported(name, 'busy');
  options.beforeJobEnds?.();
  await handle.signal(jobCompletedSignal, { jobId: 7, conclusion: 'success' });
  return handle;
}

/** Gives the machine's clean-up up to 10 s once the provider answers again. */
async function untilMachineGone(name: string): Promise<void> {
  for (let i = 0; i < 100 && env.w.fake.instance(name) !== undefined; i++) await new Promise((r) => setTimeout(r, 100));
}

const withDeleteFault = (name: string, plan: Omit<FakeFaultPlan, 'instance'>, check: () => Promise<void>) => withFault(env.w.fake, 'delete', name, plan, check);

const deleteOutcomes = (name: string) =>
  env.w.fake
    .calls('delete')
    .filter((c) => c.instance === `fake-${name}` || c.instance === name)
    .map((c) => c.outcome);

describe('inline first delete attempt', () => {
  it('an ephemeral runner whose job is done deletes its machine and closes in one workflow task, without an activity task', async () => {
    const name = uniqueName('inline-del-quick');
    const handle = await runOneJob(name);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'deleted', forced: false });
    expect(env.w.fake.instance(name)).toBeUndefined();
    expect(deleteOutcomes(name)).toEqual(['deleted']);
    expect(await scheduledActivities(handle)).toEqual([]);
    expect(await tasksAfterJobCompleted(handle)).toBe(1);
  });

  it('a delete slower than the bound is cut off and finished at once by the ordinary activity', async () => {
    const name = uniqueName('inline-del-slow');
    await withDeleteFault(name, { delayMs: INLINE_BOUND_MS * 2 }, async () => {
      const handle = await runOneJob(name);
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'deleted', forced: false });
      expect(result.lastError).toBeUndefined();
      expect(await scheduledActivities(handle)).toEqual(['deleteInstance']);
      // Cut off, not failed: no backoff timer between the two attempts.
      const timers = (await eventsOf(handle)).filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED);
      const bootstrapTimer = 1;
      expect(timers).toHaveLength(bootstrapTimer);
      expect(deleteOutcomes(name)).toEqual(['aborted', 'deleted']);
      expect(env.w.fake.instance(name)).toBeUndefined();
    });
  });

  it('a failed inline attempt is retried by the activity after the first backoff, until the machine is gone', async () => {
    const name = uniqueName('inline-del-fails');
    await withDeleteFault(name, { failTimes: 2 }, async () => {
      const handle = await runOneJob(name);
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'deleted', forced: false });
      expect(result.lastError).toBeUndefined();
      const events = await eventsOf(handle);
      expect(events.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED)).toHaveLength(2);
      expect(await scheduledActivities(handle)).toEqual(['deleteInstance']);
      // The activity's own retry took the second failure.
      const completed = events.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED);
      expect(completed?.activityTaskStartedEventAttributes?.attempt).toBe(2);
      expect(deleteOutcomes(name).filter((o) => o === 'deleted')).toHaveLength(1);
      expect(env.w.fake.instance(name)).toBeUndefined();
    });
  });

  it('a forceDelete while a hanging delete goes on closes the workflow, and the machine is left to its clean-up', async () => {
    const name = uniqueName('inline-del-forced');
    await withDeleteFault(name, { hang: true }, async () => {
      const handle = await runOneJob(name);
      await waitForStatus(handle, 'deleting');
      await handle.signal(forceDeleteSignal, { reason: 'delete hangs' });
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'deleted', forced: true, leaked: true });
      expect(result.transitions.at(-1)?.reason).toContain('retries it until the machine is gone');
    });
    // The provider answers again: the clean-up workflow gets the machine deleted.
    await untilMachineGone(name);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('tells its pool the runner is gone without first saying it is leaving when the inline delete removes the machine', async () => {
    const name = uniqueName('inline-del-told');
    const handle = await runOneJob(name, { notifyPool: true });
    expect(await handle.result()).toMatchObject({ status: 'deleted', forced: false });
    expect(phasesReported(name)).toEqual(['idle', 'busy', 'deleted']);
    expect(poolReports.filter((r) => r.report.name === name).map((r) => r.report.seq)).toEqual([1, 2, 3]);
    // The report went with the delete: the closing task ran one local activity, not two.
    expect(await stepsAfterJobCompleted(handle)).toEqual(['deleteInstanceInline']);
    expect(await tasksAfterJobCompleted(handle)).toBe(1);
  });

  it('tells its pool itself when the pool did not take the report the inline delete sent', async () => {
    const name = uniqueName('inline-del-told-again');
    refuseNextGoneReport.add(name);
    const handle = await runOneJob(name, { notifyPool: true });
    expect(await handle.result()).toMatchObject({ status: 'deleted', forced: false });
    expect(refuseNextGoneReport.has(name)).toBe(false);
    expect(phasesReported(name)).toEqual(['idle', 'busy', 'deleted']);
    // The same report again, under the number the refused one had.
    expect(poolReports.filter((r) => r.report.name === name).map((r) => r.report.seq)).toEqual([1, 2, 3]);
    expect(await stepsAfterJobCompleted(handle)).toEqual(['deleteInstanceInline', 'reportToPool']);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('says it is leaving once the inline delete is cut off, before the activity takes over', async () => {
    const name = uniqueName('inline-del-told-slow');
    await withDeleteFault(name, { delayMs: INLINE_BOUND_MS * 3 }, async () => {
      const handle = await runOneJob(name, { notifyPool: true });
      // The pool hears of it while the activity still deletes, not only when the machine is gone.
      await untilReported(name, 'leaving');
      expect(env.w.fake.instance(name)).toBeDefined();
      expect(await handle.result()).toMatchObject({ status: 'deleted', forced: false });
      expect(phasesReported(name)).toEqual(['idle', 'busy', 'leaving', 'deleted']);
      expect(await scheduledActivities(handle)).toEqual(['deleteInstance']);
    });
  });

  it('says it is leaving when a forceDelete cuts in while the inline delete hangs', async () => {
    const name = uniqueName('inline-del-told-forced');
    await withDeleteFault(name, { hang: true }, async () => {
      const handle = await runOneJob(name, { notifyPool: true });
      await waitForStatus(handle, 'deleting');
      await handle.signal(forceDeleteSignal, { reason: 'delete hangs' });
      expect(await handle.result()).toMatchObject({ status: 'deleted', forced: true, leaked: true });
      expect(phasesReported(name)).toEqual(['idle', 'busy', 'leaving', 'deleted']);
    });
    await untilMachineGone(name);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('says it is leaving when the provider refuses the delete for good, and the workflow fails with the reason', async () => {
    // The provider was taken out of the worker's configuration while the runner ran: no
    // attempt will ever delete the machine, so the workflow fails, and the pool must not go
    // on counting the runner as busy until its audit finds the failed workflow.
    const name = uniqueName('inline-del-refused');
    providers.set('vanishing', quick);
    const handle = await runOneJob(name, { notifyPool: true, provider: 'vanishing', beforeJobEnds: () => providers.delete('vanishing') });
    const failure = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const causes: string[] = [];
    for (let e: unknown = failure; e instanceof Error; e = e.cause) causes.push(e.message);
    expect(causes.join(' <- ')).toContain('provider "vanishing" is not configured on this worker');
    await untilReported(name, 'leaving');
    expect(phasesReported(name)).toEqual(['idle', 'busy', 'leaving']);
    expect(await scheduledActivities(handle)).toEqual([]);
    // Nothing deleted it: the machine is still there for the sweep to find.
    expect(env.w.fake.instance(name)).toBeDefined();
  });

  it('a forced delete tells its pool the runner is gone at once, beside the forced step, without saying it is leaving first', async () => {
    const name = uniqueName('forced-told-at-once');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { notifyPool: true, pool: uniqueName('told-pool') }));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await untilReported(name, 'idle');
    await withDeleteFault(name, { hang: true }, async () => {
      await handle.signal(forceDeleteSignal, { reason: 'operator' });
      expect(await handle.result()).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    });
    expect(phasesReported(name)).toEqual(['idle', 'deleted']);
    // On a hanging provider the forced step takes its whole bound before it hands the machine
    // over; the report went out beside it, not after it.
    const closedAt = (await handle.describe()).closeTime!.getTime();
    expect(closedAt - reportedAt(name, 'deleted')).toBeGreaterThan(FAST_TIMINGS.forceDeleteAttemptTimeoutMs / 2);
    await untilMachineGone(name);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });
});

describe('reports to the pool', () => {
  it('changes heard in one workflow task go to the pool as one report, of where they ended', async () => {
    const name = uniqueName('one-task-reports');
    // The create takes a while, inline (a provider whose inline bound is longer than the create):
    // signals sent while that task is out wait for the next one, which hears the agent come
    // online and the job start together. The window is wide enough for a loaded machine.
    providers.set('patient', Object.assign(new FakeProvider({ name: 'fake', stateDir: fakeDir }), { inlineCreateTimeoutMs: 10_000, inlineDeleteTimeoutMs: INLINE_BOUND_MS }));
    await withFault(env.w.fake, 'create', name, { delayMs: 1_500 }, async () => {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { notifyPool: true, pool: uniqueName('told-pool'), provider: 'patient' }));
      await eventually(async () => ((await eventsOf(handle)).some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) ? true : undefined), 5_000, 'the first task');
      await handle.signal(runnerStatusSignal, { status: 'idle' });
      await handle.signal(jobStartedSignal, { jobId: 7 });
      await untilReported(name, 'busy');
      const events = await eventsOf(handle);
      const signalTasks = events.filter((e, i) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED && events[i - 1]?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
      expect(signalTasks).toHaveLength(1);
      await handle.signal(jobCompletedSignal, { jobId: 7, conclusion: 'success' });
      expect(await handle.result()).toMatchObject({ status: 'deleted', forced: false });
    });
    expect(phasesReported(name)).toEqual(['busy', 'deleted']);
    expect(poolReports.filter((r) => r.report.name === name).map((r) => r.report.seq)).toEqual([1, 2]);
  });
});
