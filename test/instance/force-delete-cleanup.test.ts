/**
 * A forced delete closes the instance at once; a machine the provider did not
 * confirm gone is handed to its machineCleanup workflow, which keeps retrying
 * with the delete backoff until it is gone and is findable as leaked meanwhile.
 */
import { describe, expect, it } from 'vitest';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';
import { deleteSignal, forceDeleteSignal } from '../../workflows/messages';
import { eventually, FAST_TIMINGS, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { startInstance, waitForStatus } from './helpers';

const env = useTestWorker();

describe('forced delete hands an unconfirmed machine to its clean-up workflow', () => {
  it('retries a failing provider until the machine is gone, marked RunnerLeaked until then', async () => {
    const name = uniqueName('cleanup-fails');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { failForever: true, instance: name, message: 'provider credentials expired' });
    await handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    expect(final.transitions.at(-1)?.reason).toContain(cleanupWorkflowId(name));
    expect(env.w.fake.instance(name)).toBeDefined();

    const cleanup = env.client.workflow.getHandle(cleanupWorkflowId(name));
    const running = await cleanup.describe();
    expect(running.status.name).toBe('RUNNING');
    expect(running.searchAttributes).toMatchObject({ RunnerLeaked: [true], RunnerName: [name], RunnerPool: ['test-pool'], RunnerProvider: ['fake'] });
    // It keeps trying while the provider fails, not once.
    await eventually(() => env.w.fake.calls('delete').filter((c) => c.instance === `fake-${name}` && c.outcome === 'fault').length >= 3, 15_000, 'retried deletes');

    env.w.fake.clearFaults('delete');
    const done = await cleanup.result();
    expect(done).toMatchObject({ name });
    expect(env.w.fake.instance(name)).toBeUndefined();
    const closed = await cleanup.describe();
    expect(closed.status.name).toBe('COMPLETED');
    expect(closed.searchAttributes).toMatchObject({ RunnerLeaked: [false], RunnerStatus: ['deleted'] });
  });

  it('has the clean-up ask GitHub again for a registration GitHub called busy when the delete was forced', async () => {
    const name = uniqueName('cleanup-busy');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    // Busy for the forced delete's removal only: the job ends before the clean-up asks.
    env.w.github.busyForRemovals.set(name, 1);
    env.w.fake.setFault('delete', { failTimes: 2, instance: name, message: 'provider busy' });
    await handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
    expect(await handle.result()).toMatchObject({ forced: true, leaked: true });
    await env.client.workflow.getHandle(cleanupWorkflowId(name)).result();
    // One removal by the forced delete (busy), one by the clean-up (now removed).
    expect(env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name).map((c) => c.outcome)).toEqual(['busy', 'removed']);
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('closes the instance while the provider hangs, and the machine goes once the provider answers', async () => {
    const name = uniqueName('cleanup-hangs');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { hang: true, instance: name });
    await handle.signal(deleteSignal, {});
    await waitForStatus(handle, 'deleting');
    await handle.signal(forceDeleteSignal, { reason: 'stuck' });
    expect(await handle.result()).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    expect(env.w.fake.instance(name)).toBeDefined();

    env.w.fake.clearFaults('delete');
    // The hanging attempt ends at its own deadline (deleteAttemptTimeout); the retry after it deletes.
    await env.client.workflow.getHandle(cleanupWorkflowId(name)).result();
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('gives a provider that left the graceful delete unconfirmed no second bound, and GitHub no second removal', async () => {
    const name = uniqueName('cleanup-unanswered');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { hang: true, instance: name });
    await handle.signal(deleteSignal, {});
    await waitForStatus(handle, 'deleting');
    await eventually(() => env.w.fake.attempts('delete') >= 1, 10_000, 'hanging delete started');
    // Longer than the forced attempt's bound (forceDeleteAttemptTimeout, 500 ms in tests).
    await new Promise((resolve) => setTimeout(resolve, 700));
    await handle.signal(forceDeleteSignal, { reason: 'stuck for a while' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    // Handed over without another bounded attempt: the reason is the unanswered delete, not the bound.
    expect(final.lastError).toMatch(/the provider has not confirmed a delete asked for \d+ ms ago/);
    expect(final.transitions.at(-1)?.reason).toContain(cleanupWorkflowId(name));

    env.w.fake.clearFaults('delete');
    await env.client.workflow.getHandle(cleanupWorkflowId(name)).result();
    expect(env.w.fake.instance(name)).toBeUndefined();
    // The graceful path removed the registration; neither the forced step nor the clean-up asked again.
    expect(env.w.github.calls.filter((c) => c.op === 'remove' && c.name === name)).toHaveLength(1);
  });

  it("gives the provider's last error as the reason when the graceful delete keeps failing", async () => {
    const name = uniqueName('cleanup-failing');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    env.w.fake.setFault('delete', { failForever: true, instance: name, message: 'quota service unavailable' });
    await handle.signal(deleteSignal, {});
    await waitForStatus(handle, 'deleting');
    // Longer than the forced attempt's bound (500 ms in tests), with attempts failing meanwhile.
    await eventually(() => env.w.fake.calls('delete').filter((c) => c.instance === `fake-${name}` && c.outcome === 'fault').length >= 2, 10_000, 'failed deletes');
    await new Promise((resolve) => setTimeout(resolve, 600));
    // A forced attempt would now hang until its bound: the reason must come from the earlier failures.
    env.w.fake.setFault('delete', { hang: true, instance: name });
    await handle.signal(forceDeleteSignal, { reason: 'keeps failing' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    // Read from the pending attempt the server keeps, since the forced step made no attempt of its own.
    expect(final.lastError).toContain('quota service unavailable');
    expect(final.lastError).not.toMatch(/no answer within/);

    env.w.fake.clearFaults('delete');
    await env.client.workflow.getHandle(cleanupWorkflowId(name)).result();
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('watches for the machine a create cut off by the forced delete still makes, and deletes it', async () => {
    const name = uniqueName('cleanup-cut-off-create');
    // The cut-off attempt could run for up to this long: the clean-up watches that long.
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { timings: { ...FAST_TIMINGS, createAttemptTimeoutMs: 4_000 } }));
    // A cloud that took the request makes the machine 1.5 s later, whoever hung up meanwhile.
    env.w.fake.setFault('create', { delayMs: 1_500, landsAfterAbort: true, instance: name });
    await waitForStatus(handle, 'creating');
    await eventually(() => env.w.fake.attempts('create') >= 1, 10_000, 'create under way');
    await handle.signal(forceDeleteSignal, { reason: 'operator removed the pool' });
    const final = await handle.result();
    // The provider found no machine, but that confirms nothing while the create may still land.
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    expect(final.lastError).toMatch(/create was under way/);
    expect(env.w.fake.calls('delete').find((c) => c.instance === name)?.outcome).toBe('absent');
    const cleanup = env.client.workflow.getHandle(cleanupWorkflowId(name));
    expect((await cleanup.describe()).searchAttributes).toMatchObject({ RunnerLeaked: [true], RunnerName: [name] });

    await cleanup.result();
    // The machine was made after the forced delete looked, and the clean-up deleted it.
    const deletes = env.w.fake.calls('delete').filter((c) => c.instance === name || c.instance === `fake-${name}`);
    expect(deletes.map((c) => c.outcome)).toContain('deleted');
    expect(env.w.fake.instance(name)).toBeUndefined();
    expect((await cleanup.describe()).searchAttributes).toMatchObject({ RunnerLeaked: [false], RunnerStatus: ['deleted'] });
    // The registration the cut-off attempt made is gone too.
    expect(env.w.github.runners.has(name)).toBe(false);
  });

  it('starts no clean-up when the provider confirmed the delete in time', async () => {
    const name = uniqueName('cleanup-none');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(forceDeleteSignal, {});
    expect(await handle.result()).toMatchObject({ status: 'deleted', forced: true, leaked: false });
    expect(env.w.fake.instance(name)).toBeUndefined();
    await expect(env.client.workflow.getHandle(cleanupWorkflowId(name)).describe()).rejects.toThrow(/not found/i);
  });
});

describe('forced delete when the worker cannot start the clean-up itself', () => {
  // The step's client cannot reach Temporal (every attempt fails); the workflow's own commands still can.
  const cut = useTestWorker({
    extraActivities: {
      forceDeleteMachine: async () => {
        throw new Error('14 UNAVAILABLE: No connection established');
      },
    },
  });

  it('starts the clean-up as a child that outlives the runner, so the machine is still deleted and listed as leaked until then', async () => {
    const name = uniqueName('cleanup-by-child');
    const handle = await startInstance(cut.client, cut.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    cut.w.fake.setFault('delete', { failTimes: 2, instance: name });
    await handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: true });
    expect(final.lastError).toContain('UNAVAILABLE');
    expect(final.transitions.at(-1)?.reason).toContain(cleanupWorkflowId(name));

    const cleanup = cut.client.workflow.getHandle(cleanupWorkflowId(name));
    const started = await cleanup.describe();
    expect(started.raw.workflowExecutionInfo?.parentExecution?.workflowId).toBe(handle.workflowId);
    expect(started.searchAttributes).toMatchObject({ RunnerName: [name], RunnerPool: ['test-pool'], RunnerProvider: ['fake'] });
    await cleanup.result();
    expect(cut.w.fake.instance(name)).toBeUndefined();
    expect((await cleanup.describe()).searchAttributes).toMatchObject({ RunnerLeaked: [false], RunnerStatus: ['deleted'] });
  });
});
