/**
 * A provider that answers quickly gets the first create attempt inline: a local
 * activity in the worker running the runner's workflow task, with no activity
 * task on the server. Slow, failing and forced cases fall back to what an
 * ordinary activity guarantees.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeProvider, type FakeFaultPlan } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { forceDeleteSignal, runnerStatusSignal } from '../../workflows/messages';
import { instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { EventType, eventsOf, scheduledActivities, startInstance, waitForStatus, withFault } from './helpers';

const INLINE_BOUND_MS = 600;
const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-inline-'));
const quick: ProviderPort = Object.assign(new FakeProvider({ name: 'fake', stateDir: fakeDir }), { inlineCreateTimeoutMs: INLINE_BOUND_MS });
const env = useTestWorker({ fakeDir, providers: new Map([['fake', quick]]) });

/** Runs `check` with the fake's create calls for `name` answering as `plan` says. */
const withCreateFault = (name: string, plan: Omit<FakeFaultPlan, 'instance'>, check: () => Promise<void>) => withFault(env.w.fake, 'create', name, plan, check);

describe('inline first create attempt', () => {
  it('creates the machine without an activity task on the server, and the runner lives as usual', async () => {
    const name = uniqueName('inline-quick');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    const state = await waitForStatus(handle, 'running');
    expect(state.providerId).toBeTruthy();
    expect(env.w.fake.createdCount(name)).toBe(1);
    expect(await scheduledActivities(handle)).toEqual([]);
    const markers = (await eventsOf(handle)).filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED);
    expect(markers.length).toBeGreaterThanOrEqual(1);

    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await handle.signal(forceDeleteSignal, {});
    expect(await handle.result()).toMatchObject({ status: 'deleted' });
    expect(env.w.fake.instance(name)).toBeUndefined();
  });

  it('a create slower than the bound is cut off and finished by an ordinary activity, on one machine, without using up an attempt', async () => {
    const name = uniqueName('inline-slow');
    await withCreateFault(name, { delayMs: INLINE_BOUND_MS * 2 }, async () => {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
      const state = await waitForStatus(handle, 'running');
      expect(state.lastError).toBeUndefined();
      expect(await scheduledActivities(handle)).toEqual(['createInstance']);
      const scheduled = (await eventsOf(handle)).find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
      expect(scheduled?.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts).toBe(3);
      const creates = env.w.fake.calls('create').filter((c) => c.instance === name).map((c) => c.outcome);
      expect(creates).toEqual(['aborted', 'created']);
      expect(env.w.fake.createdCount(name)).toBe(1);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    });
  });

  it('a cut-off attempt whose provider makes the machine anyway is waited for: one registration, kept by the runner', async () => {
    const name = uniqueName('inline-lands-late');
    await withCreateFault(name, { delayMs: INLINE_BOUND_MS * 2, landsAfterAbort: true }, async () => {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
      const state = await waitForStatus(handle, 'running');
      expect(await scheduledActivities(handle)).toEqual(['createInstance']);
      // The activity after the cut-off attempt found that attempt's machine instead of minting
      // again: a second mint would remove the registration the machine's agent holds.
      expect(env.w.github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(1);
      expect(env.w.fake.instances().filter((m) => m.name === name)).toHaveLength(1);
      expect(state.githubRunnerId).toBe(env.w.github.runners.get(name)?.id);
      expect(state.transitions.at(-1)?.reason).toMatch(/earlier attempt/);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    });
  });

  it('a cut-off attempt whose registration came after its bound hands it on: the runner is registered once', async () => {
    const name = uniqueName('inline-slow-mint');
    env.w.github.setFault('credential', { delayMs: INLINE_BOUND_MS + 100, delayTimes: 1 });
    try {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
      const state = await waitForStatus(handle, 'running');
      expect(await scheduledActivities(handle)).toEqual(['createInstance']);
      expect(env.w.github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(1);
      expect(state.githubRunnerId).toBe(env.w.github.runners.get(name)?.id);
      expect(env.w.fake.createdCount(name)).toBe(1);
      // The cut-off attempt asked the provider for nothing once its registration came: had it,
      // the fake would record a call made with an aborted signal. On another worker that call
      // could make a machine beside the one the attempt after it makes.
      expect(env.w.fake.calls('create').filter((c) => c.instance === name).map((c) => c.outcome)).toEqual(['created']);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    } finally {
      env.w.github.setFault('credential', {});
    }
  });

  it('a failed inline attempt is retried after the first backoff, and counts as an attempt', async () => {
    const name = uniqueName('inline-fails');
    await withCreateFault(name, { failTimes: 1 }, async () => {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
      const state = await waitForStatus(handle, 'running');
      expect(state.lastError).toBeUndefined();
      const events = await eventsOf(handle);
      expect(events.some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED)).toBe(true);
      expect(await scheduledActivities(handle)).toEqual(['createInstance']);
      const scheduled = events.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
      // FAST_TIMINGS allows three attempts in all: the inline one used the first.
      expect(scheduled?.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts).toBe(2);
      expect(env.w.fake.createdCount(name)).toBe(1);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    });
  });

  it('with one attempt allowed, a failed inline attempt fails the create and the runner is cleaned up', async () => {
    const name = uniqueName('inline-once');
    await withCreateFault(name, { failForever: true }, async () => {
      const input = instanceInput(name, { timings: { ...instanceInput(name).timings, createMaxAttempts: 1 } });
      const handle = await startInstance(env.client, env.w.taskQueue, input);
      const result = await handle.result();
      expect(result.status).toBe('deleted');
      expect(result.transitions.map((tr) => tr.to)).toContain('error');
      expect(result.lastError).toContain('injected create fault');
      expect(await scheduledActivities(handle)).not.toContain('createInstance');
    });
  });

  it('with one attempt allowed, a slow inline attempt still leaves that attempt to the activity', async () => {
    const name = uniqueName('inline-once-slow');
    await withCreateFault(name, { delayMs: INLINE_BOUND_MS * 2 }, async () => {
      const input = instanceInput(name, { timings: { ...instanceInput(name).timings, createMaxAttempts: 1 } });
      const handle = await startInstance(env.client, env.w.taskQueue, input);
      await waitForStatus(handle, 'running');
      expect(env.w.fake.createdCount(name)).toBe(1);
      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    });
  });

  it('a forceDelete during a hanging inline attempt closes the workflow once the attempt is cut off', async () => {
    const name = uniqueName('inline-forced');
    await withCreateFault(name, { hang: true }, async () => {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
      await waitForStatus(handle, 'creating');
      await handle.signal(forceDeleteSignal, { reason: 'create hangs' });
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'deleted', forced: true });
      expect(env.w.fake.instance(name)).toBeUndefined();
      expect(env.w.fake.createdCount(name)).toBe(0);
    });
  });
});
