import { describe, expect, it } from 'vitest';
import { deleteSignal, forceDeleteSignal, healthReportSignal, jobCompletedSignal, jobStartedSignal, runnerStatusSignal, stateQuery } from '../../workflows/messages';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';
import { eventually, FAST_TIMINGS, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { expectLegalChain, startInstance, waitForStatus } from './helpers';

const env = useTestWorker();

function gaps(times: number[]): number[] {
  return times.slice(1).map((t, i) => t - times[i]!);
}

describe('create failures', () => {
  it('retries a failing create and makes exactly one machine', async () => {
    const name = uniqueName('create-retry');
    env.w.fake.setFault('create', { failTimes: 2, instance: name });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    const creates = env.w.fake.calls('create').filter((c) => c.instance === name);
    expect(creates.map((c) => c.outcome)).toEqual(['fault', 'fault', 'created']);
    expect(env.w.fake.createdCount(name)).toBe(1);
    await handle.signal(deleteSignal, {});
    expect((await handle.result()).status).toBe('deleted');
  });

  it('goes error → pending_delete and cleans up when create fails for good', async () => {
    const name = uniqueName('create-fails');
    env.w.fake.setFault('create', { failForever: true, instance: name, message: 'quota exceeded' });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    const final = await handle.result();
    expect(expectLegalChain(final)).toEqual(['creating', 'error', 'pending_delete', 'deleting', 'deleted']);
    expect(final.lastError).toContain('quota exceeded');
    expect(env.w.fake.calls('create').filter((c) => c.instance === name)).toHaveLength(FAST_TIMINGS.createMaxAttempts);
    // The cleanup still ran: a delete reached the provider and the GitHub registration was dropped.
    expect(env.w.fake.calls('delete').some((c) => c.instance === name || c.instance === `fake-${name}`)).toBe(true);
    expect(env.w.github.calls.some((c) => c.op === 'remove' && c.name === name)).toBe(true);
  });

  it('reuses a machine an earlier attempt already made', async () => {
    const name = uniqueName('reuse');
    env.w.fake.addInstance({ name, controllerId: 'test-controller', poolId: 'test-pool' });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    const state = await waitForStatus(handle, 'running');
    expect(state.transitions.at(-1)?.reason).toMatch(/earlier attempt/);
    expect(env.w.fake.createdCount(name)).toBe(0);
    await handle.signal(forceDeleteSignal, { reason: 'done' });
    await handle.result();
  });
});

describe('delete with backoff', () => {
  it('retries a failing provider delete with growing intervals, without growing history', async () => {
    const name = uniqueName('delete-retry');
    // Production's 1 s initial interval: the server schedules retries with one-second granularity.
    const timings = { ...FAST_TIMINGS, deleteInitialIntervalMs: 1_000, deleteMaxIntervalMs: 10_000 };
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { timings }));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { failTimes: 3, instance: name });
    await handle.signal(deleteSignal, { reason: 'test' });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    const deletes = env.w.fake.calls('delete').filter((c) => c.instance === `fake-${name}`);
    expect(deletes.map((c) => c.outcome)).toEqual(['fault', 'fault', 'fault', 'deleted']);
    // 1 s initial interval, coefficient 2: about 1, 2 and 4 s between attempts.
    const between = gaps(deletes.map((c) => c.at));
    expect(between[0]).toBeGreaterThanOrEqual(900);
    expect(between[1]).toBeGreaterThanOrEqual(1_800);
    expect(between[2]).toBeGreaterThanOrEqual(3_600);
    expect(between[2]).toBeLessThan(8_000);
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deleteInstance');
    expect(scheduled).toHaveLength(1);
    const completedAttempt = (history.events ?? []).find((e) => e.activityTaskStartedEventAttributes)?.activityTaskStartedEventAttributes;
    expect(completedAttempt).toBeDefined();
  });

  it('keeps retrying a delete whose failure the provider calls permanent, until the machine is gone', async () => {
    const name = uniqueName('delete-permanent');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    // Bad credentials or an executable missing mid-redeploy: no attempt can succeed until an operator
    // fixes it, and giving up would fail the workflow with the machine still running.
    env.w.fake.setFault('delete', { failTimes: 3, permanent: true, instance: name, message: 'AuthFailure' });
    await handle.signal(deleteSignal, { reason: 'test' });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(final.leaked).toBe(false);
    const deletes = env.w.fake.calls('delete').filter((c) => c.instance === `fake-${name}`);
    expect(deletes.map((c) => c.outcome)).toEqual(['fault', 'fault', 'fault', 'deleted']);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('forceDelete ends a delete that fails forever and marks the machine leaked', async () => {
    const name = uniqueName('delete-forever');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { failForever: true, instance: name, message: 'credentials expired' });
    await handle.signal(deleteSignal, {});
    await eventually(() => env.w.fake.calls('delete').filter((c) => c.instance === `fake-${name}`).length >= 2, 15_000, 'two failed deletes');
    await handle.signal(forceDeleteSignal, { reason: 'provider misconfigured' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    expect(final.lastError).toContain('credentials expired');
    expect(expectLegalChain(final)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'pending_force_delete', 'deleting', 'deleted']);
    expect(env.w.fake.instance(name)).toBeDefined();
    const desc = await handle.describe();
    expect(desc.searchAttributes.RunnerLeaked).toEqual([true]);
  });

  it('forceDelete ends a delete that hangs', async () => {
    const name = uniqueName('delete-hangs');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { hang: true, instance: name });
    await handle.signal(deleteSignal, {});
    await waitForStatus(handle, 'deleting');
    await eventually(() => env.w.fake.calls('delete').length >= 0 && (env.w.fake.attempts('delete') >= 1 ? true : undefined), 10_000, 'hanging delete started');
    await handle.signal(forceDeleteSignal, { reason: 'stuck' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    expect(final.transitions.find((t) => t.to === 'pending_force_delete')?.reason).toBe('stuck');
  });

  it('treats cancelling the workflow as a forced delete, so the machine is not left behind', async () => {
    const name = uniqueName('cancelled');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.cancel();
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: false });
    expect(final.transitions.find((t) => t.to === 'pending_force_delete')?.reason).toBe('workflow cancelled');
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('forceDelete cuts into a hanging create', async () => {
    const name = uniqueName('create-hangs');
    env.w.fake.setFault('create', { hang: true, instance: name });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { timings: { ...FAST_TIMINGS, createAttemptTimeoutMs: 3_000 } }));
    await waitForStatus(handle, 'creating');
    await eventually(() => env.w.fake.attempts('create') >= 1, 10_000, 'hanging create started');
    await handle.signal(forceDeleteSignal, {});
    const final = await handle.result();
    expect(expectLegalChain(final)).toEqual(['creating', 'pending_force_delete', 'deleting', 'deleted']);
    expect(final.forced).toBe(true);
    // The provider found nothing, which confirms nothing while the cut-off create might still
    // make the machine: its clean-up looks again until that attempt can no longer be running.
    expect(final.leaked).toBe(true);
    await env.client.workflow.getHandle(cleanupWorkflowId(name)).result();
    expect(env.w.fake.instance(name)).toBeUndefined();
  });
});

describe('busy runners and registration', () => {
  it('does not delete a busy ephemeral runner until its job completes, and asks GitHub once', async () => {
    const name = uniqueName('busy');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    env.w.github.busy.add(name);
    await handle.signal(deleteSignal, { reason: 'scale down' });
    await eventually(() => env.w.github.count('remove', 'busy') >= 1 || undefined, 10_000, 'busy answer');
    // Several busy-retry intervals pass: the machine stays, GitHub is not asked again.
    await new Promise((r) => setTimeout(r, FAST_TIMINGS.busyRetryIntervalMs * 4));
    const waiting = await handle.query(stateQuery);
    expect(waiting.status).toBe('pending_delete');
    expect(waiting.runnerStatus).toBe('active');
    expect(env.w.fake.instance(name)).toBeDefined();
    expect(env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name)).toHaveLength(1);

    await handle.signal(jobStartedSignal, { jobId: 9 });
    await handle.signal(jobCompletedSignal, { jobId: 9, conclusion: 'success' });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(env.w.fake.instance(name)).toBeUndefined();
    expect(env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name)).toHaveLength(1);
  });

  it('keeps waiting for a busy ephemeral runner when the provider cannot say whether its machine stopped', async () => {
    const name = uniqueName('busy-probe-fails');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    env.w.github.busy.add(name);
    // Every look at the machine fails: unknown is not stopped, and not a reason to end the workflow
    // (a failed runner workflow is never heard of by its pool, and its busy machine goes to the sweep).
    env.w.fake.setFault('get', { failForever: true, instance: name, message: 'provider API down' });
    await handle.signal(deleteSignal, { reason: 'scale down' });
    await eventually(() => env.w.fake.calls('get').filter((c) => c.instance === `fake-${name}` && c.outcome === 'fault').length >= 4 || undefined, 20_000, 'failed probes');
    const waiting = await handle.query(stateQuery);
    expect(waiting.status).toBe('pending_delete');
    expect(env.w.fake.instance(name)).toBeDefined();

    env.w.fake.clearFaults('get');
    await handle.signal(jobStartedSignal, { jobId: 11 });
    await handle.signal(jobCompletedSignal, { jobId: 11, conclusion: 'success' });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('takes a second look before deleting a machine one listing called dead when GitHub says it has a job', async () => {
    const name = uniqueName('listing-lied');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    // The job started before the runner heard of it; the provider's listing got this machine wrong.
    env.w.github.busy.add(name);
    await handle.signal(healthReportSignal, { finding: 'machine_stopped', detail: 'listed as stopped' });
    await eventually(() => env.w.github.count('remove', 'busy') >= 1 || undefined, 10_000, 'busy answer');
    await new Promise((r) => setTimeout(r, FAST_TIMINGS.busyRetryIntervalMs * 3));
    expect(env.w.fake.instance(name)).toBeDefined();
    expect((await handle.query(stateQuery)).status).toBe('pending_delete');

    await handle.signal(jobStartedSignal, { jobId: 12 });
    await handle.signal(jobCompletedSignal, { jobId: 12, conclusion: 'success' });
    expect((await handle.result()).status).toBe('deleted');
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('asks GitHub again for a busy static runner only as the backoff says', async () => {
    const name = uniqueName('busy-static');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, {}, { ephemeral: false }));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    env.w.github.busy.add(name);
    const started = Date.now();
    await handle.signal(deleteSignal, {});
    await new Promise((r) => setTimeout(r, 2_000));
    const busyAnswers = env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name).length;
    // Intervals 300, 600, 1200 ms: at most four calls within two seconds.
    expect(busyAnswers).toBeGreaterThanOrEqual(2);
    expect(busyAnswers).toBeLessThanOrEqual(4);
    expect(env.w.fake.instance(name)).toBeDefined();
    env.w.github.busy.delete(name);
    await handle.signal(jobCompletedSignal, { jobId: 1 });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(Date.now() - started).toBeGreaterThan(2_000);
  });

  it('continues as new while a static runner asked to leave keeps taking jobs, and leaves once GitHub lets it', async () => {
    const name = uniqueName('busy-for-days');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { historyLimit: 60 }, { ephemeral: false }));
    await waitForStatus(handle, 'running');
    const firstRunId = (await handle.describe()).runId;
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    env.w.github.busy.add(name);
    await handle.signal(deleteSignal, { reason: 'pool deleted' });
    // GitHub hands the still-registered runner one job after another: each ends, the runner asks to go, GitHub says busy.
    for (let job = 1; job <= 12; job++) {
      const asked = env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name).length;
      await handle.signal(jobCompletedSignal, { jobId: job });
      await eventually(() => env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name).length > asked || undefined, 10_000, `asked again after job ${job}`);
    }
    const now = await handle.describe();
    expect(now.runId).not.toBe(firstRunId);
    expect(now.historyLength).toBeLessThanOrEqual(100);
    expect((await handle.query(stateQuery)).status).toBe('pending_delete');
    expect(env.w.fake.instance(name)).toBeDefined();

    env.w.github.busy.delete(name);
    await handle.signal(jobCompletedSignal, { jobId: 13 });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('says again that it is leaving when asked again, so a pool that missed the report stops asking', async () => {
    const name = uniqueName('asked-twice');
    // Its pool does not exist: every report is lost, as one is when the pool cannot take it in time.
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { notifyPool: true, pool: uniqueName('no-pool') }));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await handle.signal(jobStartedSignal, { jobId: 70 });
    env.w.github.busy.add(name);
    const leavingReports = async (): Promise<number> => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.filter((e) => {
        const marker = e.markerRecordedEventAttributes;
        if (marker?.markerName !== 'core_local_activity') return false;
        const data = marker.details?.['data']?.payloads?.[0]?.data;
        return data !== undefined && data !== null && Buffer.from(data).toString().includes('reportToPool');
      }).length;
    };
    await handle.signal(deleteSignal, { reason: 'scale down' });
    await eventually(() => env.w.github.count('remove', 'busy') >= 1 || undefined, 10_000, 'busy answer');
    await eventually(async () => ((await handle.query(stateQuery)).status === 'pending_delete' ? true : undefined), 10_000, 'leaving');
    // The first ask's reports have all been tried (each a local activity, recorded as it ends).
    await new Promise((r) => setTimeout(r, 1_000));
    const afterFirstAsk = await leavingReports();
    await handle.signal(deleteSignal, { reason: 'scale down' });
    await eventually(async () => ((await leavingReports()) > afterFirstAsk ? true : undefined), 10_000, 'the leaving report sent again');
    env.w.github.busy.delete(name);
    await handle.signal(jobCompletedSignal, { jobId: 70 });
    expect((await handle.result()).status).toBe('deleted');
  });

  it('reaps a runner that does not report idle within the bootstrap timeout', async () => {
    const name = uniqueName('no-idle');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, {}, { bootstrapTimeoutMs: 1_500 }));
    const final = await handle.result();
    expect(expectLegalChain(final)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'deleted']);
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toMatch(/bootstrap timeout/);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('a runner reporting failure is deleted', async () => {
    const name = uniqueName('failed');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'failed', message: 'config.sh exited 1' });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(final.runnerStatus).toBe('failed');
    expect(final.lastError).toContain('config.sh exited 1');
  });
});
