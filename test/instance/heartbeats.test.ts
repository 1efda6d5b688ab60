/**
 * A provider call heartbeats only once it has run for one interval (a third of
 * the heartbeat timeout): most calls finish sooner and cost the server no
 * heartbeat at all, and a long one still heartbeats, so the server notices a
 * dead worker and a forced delete reaches the call.
 */
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { forceDeleteSignal } from '../../workflows/messages';
import { FAST_TIMINGS, eventually, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { startInstance, waitForStatus } from './helpers';

const env = useTestWorker();
const STARTED = proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

describe('activity heartbeats', () => {
  it('sends none during the first interval of a call, then keeps sending them', async () => {
    const name = uniqueName('heartbeats');
    env.w.fake.setFault('create', { hang: true, instance: name });
    // One interval is a third of the timeout: 2 s here.
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name, { timings: { ...FAST_TIMINGS, heartbeatTimeoutMs: 6_000 } }));
    await waitForStatus(handle, 'creating');
    const create = async () => (await handle.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'createInstance');
    const started = await eventually(async () => {
      const pending = await create();
      return pending?.state === STARTED ? pending : undefined;
    }, 10_000, 'hanging create started');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const early = await create();
    // Still inside the first interval by the server's own clock (both on this machine).
    const runningMs = Date.now() - Number(early?.lastStartedTime?.seconds ?? 0) * 1000 - Math.floor((early?.lastStartedTime?.nanos ?? 0) / 1e6);
    expect(runningMs).toBeGreaterThanOrEqual(300);
    expect(runningMs).toBeLessThan(1_800);
    expect(started.lastHeartbeatTime ?? null).toBeNull();
    expect(early?.lastHeartbeatTime ?? null).toBeNull();

    const beat = await eventually(async () => (await create())?.lastHeartbeatTime ?? undefined, 5_000, 'a heartbeat after one interval');
    expect(beat).toBeTruthy();

    await handle.signal(forceDeleteSignal, {});
    expect(await handle.result()).toMatchObject({ status: 'deleted', forced: true });
  });
});
