/**
 * Signals that reach a runner before its run's first workflow task: the server
 * hands them over in that task, and the SDK delivers them as soon as their
 * handlers are set. That happens when a signal comes with the start, when the
 * first task timed out on a busy worker and the agent's report came in the
 * meantime, and when events arrive while a long-lived runner continues as new.
 */
import type { WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { instanceStartOptions } from '../../workflows/instance-options';
import { forceDeleteSignal, jobStartedSignal, runnerStatusSignal, stateQuery, type InstanceState, type RunnerInstanceInput } from '../../workflows/messages';
import { runnerInstance } from '../../workflows/runner-instance';
import { eventually, instanceInput, uniqueName, useTestWorker } from '../support/temporal';

const env = useTestWorker();
const TASK_FAILED = proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;

async function taskFailures(handle: WorkflowHandle): Promise<string[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.filter((e) => e.eventType === TASK_FAILED).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? '');
}

async function stateWhen(handle: WorkflowHandle, ready: (s: InstanceState) => boolean, what: string): Promise<InstanceState> {
  return eventually(async () => {
    const state = await handle.query(stateQuery);
    return ready(state) ? state : undefined;
  }, 15_000, what);
}

/**
 * What a previous run carries over: a registered idle runner whose machine exists. That run is
 * terminated, as a continue-as-new would close it, and the input of its successor returned.
 */
async function previousRun(name: string, extra: Partial<NonNullable<RunnerInstanceInput['resume']>> = {}): Promise<{ carried: InstanceState; resumed: RunnerInstanceInput }> {
  const first = await env.client.workflow.start(runnerInstance, { taskQueue: env.w.taskQueue, ...instanceStartOptions(instanceInput(name)) });
  await first.signal(runnerStatusSignal, { status: 'idle' });
  const carried = await stateWhen(first, (s) => s.status === 'running' && s.runnerStatus === 'idle', 'idle');
  await first.terminate('replaced by its continued run in this test');
  const resumed: RunnerInstanceInput = {
    ...instanceInput(name),
    resume: { state: carried, jobFinished: false, completedJobs: [], reportSeq: 0, reportedPhase: 'idle', ...extra },
  };
  return { carried, resumed };
}

describe('signals delivered with a run\'s first workflow task', () => {
  it('a new runner takes the agent\'s report that came with its start, and is created as usual', async () => {
    const name = uniqueName('early-status');
    const input = instanceInput(name);
    const handle = await env.client.workflow.signalWithStart(runnerInstance, {
      taskQueue: env.w.taskQueue,
      ...instanceStartOptions(input),
      signal: runnerStatusSignal,
      signalArgs: [{ status: 'idle' }],
    });
    const state = await stateWhen(handle, (s) => s.status === 'running', 'running');
    expect(state.runnerStatus).toBe('idle');
    expect(await taskFailures(handle)).toEqual([]);

    await handle.signal(forceDeleteSignal, {});
    expect(await handle.result()).toMatchObject({ status: 'deleted' });
  });

  it('a runner continued as new takes a job event that arrived while it continued', async () => {
    const name = uniqueName('early-job');
    const { carried, resumed } = await previousRun(name);
    const handle = await env.client.workflow.signalWithStart(runnerInstance, {
      taskQueue: env.w.taskQueue,
      ...instanceStartOptions(resumed),
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      signal: jobStartedSignal,
      signalArgs: [{ jobId: 4242 }],
    });
    const state = await stateWhen(handle, (s) => s.runnerStatus === 'active', 'active');
    expect(state).toMatchObject({ status: 'running', jobId: 4242, providerId: carried.providerId });
    expect(await taskFailures(handle)).toEqual([]);

    await handle.signal(forceDeleteSignal, {});
    expect(await handle.result()).toMatchObject({ status: 'deleted', forced: true });
  });

  it('a runner continued as new acts on a delete the previous run took while it was continuing', async () => {
    const name = uniqueName('carried-delete');
    const { resumed } = await previousRun(name, { deleteRequest: { reason: 'scale down' } });
    const handle = await env.client.workflow.start(runnerInstance, { taskQueue: env.w.taskQueue, ...instanceStartOptions(resumed), workflowIdReusePolicy: 'ALLOW_DUPLICATE' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted' });
    expect(final.forced).toBeFalsy();
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toBe('scale down');
    expect(env.w.fake.instance(name)).toBeUndefined();
  });
});
