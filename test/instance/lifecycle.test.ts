import { describe, expect, it } from 'vitest';
import { deleteSignal, forceDeleteSignal, jobCompletedSignal, jobStartedSignal, runnerStatusSignal, stateQuery } from '../../workflows/messages';
import { eventually, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { expectLegalChain, startInstance, waitForStatus } from './helpers';

const env = useTestWorker();

describe('runnerInstance lifecycle', () => {
  it('creates, registers, runs one job and is deleted (ephemeral)', async () => {
    const name = uniqueName('happy');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    const running = await waitForStatus(handle, 'running');
    expect(running.providerId).toBe(`fake-${name}`);
    expect(running.githubRunnerId).toBeGreaterThan(0);
    expect(env.w.fake.instance(name)?.hadCredential).toBe(true);

    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await handle.signal(jobStartedSignal, { jobId: 42, runId: 7 });
    await eventually(async () => (await handle.query(stateQuery)).runnerStatus === 'active', 10_000, 'active');
    await handle.signal(jobCompletedSignal, { jobId: 42, conclusion: 'success' });

    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(final.forced).toBe(false);
    expect(final.leaked).toBe(false);
    expect(final.jobId).toBe(42);
    expect(expectLegalChain(final)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'deleted']);
    expect(env.w.fake.instance(name)).toBeUndefined();
    // The ephemeral runner left GitHub by itself: no remove call spent on it.
    expect(env.w.github.count('remove')).toBe(0);
    expect(env.w.github.count('credential')).toBe(1);

    const history = await handle.fetchHistory();
    expect(history.events?.length ?? 0).toBeLessThan(200);
    // The JIT config never reaches workflow history.
    expect(JSON.stringify(history)).not.toContain(Buffer.from(`jit-secret-for-${name}`).toString('base64'));
  });

  it('an ephemeral runner whose job is over takes no job start under another id, as a late webhook of a scale set\'s job brings', async () => {
    const name = uniqueName('alias');
    // Its machine's delete takes a while, so that the late start reaches the runner while it leaves.
    env.w.fake.setFault('delete', { delayMs: 3_000, instance: name });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await handle.signal(jobStartedSignal, { jobId: 42, runId: 7 });
    await handle.signal(jobCompletedSignal, { jobId: 42, conclusion: 'success' });
    await eventually(async () => ((await handle.query(stateQuery)).status === 'deleting' ? true : undefined), 10_000, 'deleting');
    await handle.signal(jobStartedSignal, { jobId: 9_000_042, runId: 7 });
    const leaving = await handle.query(stateQuery);
    expect(leaving.runnerStatus).toBe('terminated');
    expect(leaving.jobId).toBe(42);
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    expect(final.jobId).toBe(42);
    env.w.fake.clearFaults('delete');
  });

  it('keeps search attributes in step with the status', async () => {
    const name = uniqueName('sa');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    const found = await eventually(async () => {
      for await (const wf of env.client.workflow.list({ query: `RunnerName="${name}" AND RunnerStatus="running"` })) return wf;
      return undefined;
    }, 15_000, 'visibility shows running');
    expect(found.workflowId).toBe(`runner/${name}`);
    await handle.signal(deleteSignal, { reason: 'test done' });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    const desc = await handle.describe();
    expect(desc.searchAttributes.RunnerStatus).toEqual(['deleted']);
  });

  it('a graceful delete of a registered runner unregisters it from GitHub first', async () => {
    const name = uniqueName('graceful');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await handle.signal(deleteSignal, { reason: 'scale down' });
    const final = await handle.result();
    expect(expectLegalChain(final)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'deleted']);
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toBe('scale down');
    expect(env.w.github.calls.filter((c) => c.name === name && c.op === 'remove').map((c) => c.outcome)).toEqual(['removed']);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('describes every signal and query for the Web UI', async () => {
    const name = uniqueName('meta');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    // The Web UI reads this built-in query to list a workflow's handlers with their descriptions.
    const meta = await handle.query<{ definition: { signalDefinitions: { name: string; description?: string }[]; queryDefinitions: { name: string; description?: string }[] } }>(
      '__temporal_workflow_metadata',
    );
    const signals = Object.fromEntries(meta.definition.signalDefinitions.map((d) => [d.name, d.description]));
    for (const signal of ['forceDelete', 'delete', 'jobStarted', 'jobCompleted', 'runnerStatus']) expect(signals[signal], signal).toBeTruthy();
    expect(signals.forceDelete).toContain('{"reason"');
    expect(meta.definition.queryDefinitions.find((d) => d.name === 'state')?.description).toBeTruthy();
    await handle.signal(forceDeleteSignal, {});
    await handle.result();
  });

  it("a static runner stays busy when its last job's completed event comes after its next job started", async () => {
    const name = uniqueName('out-of-order');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, {}, { ephemeral: false }));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await handle.signal(jobStartedSignal, { jobId: 1 });
    // GitHub sent job 2's in_progress before job 1's completed.
    await handle.signal(jobStartedSignal, { jobId: 2 });
    await handle.signal(jobCompletedSignal, { jobId: 1, conclusion: 'success' });
    await eventually(async () => {
      const state = await handle.query(stateQuery);
      return state.runnerStatus === 'active' && state.jobId === 2 ? state : undefined;
    }, 5_000, 'still busy with job 2');
    await handle.signal(jobCompletedSignal, { jobId: 2, conclusion: 'success' });
    await eventually(async () => ((await handle.query(stateQuery)).runnerStatus === 'idle' ? true : undefined), 5_000, 'idle after job 2');
    await handle.signal(deleteSignal, {});
    expect((await handle.result()).status).toBe('deleted');
  });

  it('ignores signal input that makes no sense instead of corrupting state', async () => {
    const name = uniqueName('bad-input');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    // What an operator might type into the Web UI by mistake.
    await handle.signal('runnerStatus', { status: 'sleeping' });
    await handle.signal('jobStarted', { jobId: 'forty-two' });
    await handle.signal('jobCompleted', {});
    await handle.signal('runnerStatus', 'idle');
    const state = await handle.query(stateQuery);
    expect(state).toMatchObject({ status: 'running', runnerStatus: 'pending' });
    expect(state.jobId).toBeUndefined();
    await handle.signal('forceDelete', 'not an object');
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true });
    expect(final.transitions.find((t) => t.to === 'pending_force_delete')?.reason).toBe('force delete requested');
  });
});
