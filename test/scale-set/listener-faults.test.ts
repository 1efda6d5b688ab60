import { describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { resolveTimings } from '../../domain/timings';
import { sessionOwnerName } from '../../domain/scale-set';
import {
  SCALE_SET_LISTENER_WORKFLOW,
  scaleSetListenerId,
  scaleSetStateQuery,
  stopListenerSignal,
  type ScaleSetListenerInput,
  type ScaleSetView,
} from '../../workflows/scale-set-messages';
import { eventually, uniqueName } from '../support/temporal';
import { listenerState, poolShow, SCALE_SET_TIMINGS, scaleSetPool, useScaleSetStack } from './support/stack';

const stack = useScaleSetStack(500);

async function listening(pool: string): Promise<ScaleSetView> {
  return eventually(async () => {
    const s = await listenerState(stack.client, pool);
    return s?.status === 'listening' && s.scaleSetId !== undefined ? s : undefined;
  }, 30_000, `listener of ${pool} listening`);
}

async function allDone(ids: number[]): Promise<void> {
  await eventually(() => stack.sim.jobs().filter((j) => ids.includes(j.id) && j.status === 'completed').length === ids.length, 60_000, 'jobs completed');
}

/** A listener must not poll on into the next test: the simulator's poll faults take the first poll of any scale set. */
async function deleteAndWaitForListener(pool: string): Promise<void> {
  expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool}`)).status).toBeLessThan(300);
  await stack.client.workflow.getHandle(scaleSetListenerId(pool)).result();
}

describe('the scale-set listener under faults', () => {
  it('acquires a job whose offer was lost, once a later message counts it among the available jobs', async () => {
    const pool = scaleSetPool({ maxRunners: 2 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    await listening(pool.name);
    stack.sim.setFault({ kind: 'lose-job-offer', times: 1 });
    const lost = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    // Nothing offers it; the messages about a later job carry statistics that count it.
    const later = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await allDone([lost.id, later.id]);
    const s = await listenerState(stack.client, pool.name);
    expect(s?.waitingJobsAcquired).toBe(1);
    expect(s?.jobsAcquired).toBe(2);

    await deleteAndWaitForListener(pool.name);
  });

  it('acquires a job whose offer was lost when it opens a new session that counts it, with no other message to tell', async () => {
    const pool = scaleSetPool({ maxRunners: 2 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const first = await listening(pool.name);
    stack.sim.setFault({ kind: 'lose-job-offer', times: 1 });
    const lost = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    stack.sim.setFault({ kind: 'lose-session', times: 1 });
    await allDone([lost.id]);
    const s = await listenerState(stack.client, pool.name);
    expect(s?.sessionsOpened).toBe(first.sessionsOpened + 1);
    expect(s?.waitingJobsAcquired).toBe(1);

    await deleteAndWaitForListener(pool.name);
  });

  it('acknowledges a message of a type it does not know, and the jobs offered after it still run', async () => {
    const pool = scaleSetPool({ maxRunners: 2 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    await listening(pool.name);
    // Taken by the poll after the one that is waiting now: that poll finds the foreign message first in the queue.
    stack.sim.setFault({ kind: 'foreign-message', messageType: 'RunnerScaleSetMaintenance', times: 1 });
    const before = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await allDone([before.id]);
    const after = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await allDone([after.id]);

    const settled = await eventually(async () => {
      const s = await listenerState(stack.client, pool.name);
      const set = stack.sim.scaleSets().find((x) => x.id === s?.scaleSetId);
      return s && set && set.messages.pending === 0 ? { s, set } : undefined;
    }, 30_000, 'every message acknowledged');
    expect(settled.s.unsupportedMessages).toBe(1);
    expect(settled.s.lastUnsupportedType).toBe('RunnerScaleSetMaintenance');
    expect(settled.s.status).toBe('listening');
    expect(settled.s.lastError).toBeUndefined();
    expect(settled.s.sessionsOpened).toBe(1);
    expect(settled.s.jobsAcquired).toBe(2);
    expect(await poolShow(stack, pool.name)).toMatch(/Messages of unknown type:\s+1 acknowledged unread \(latest: RunnerScaleSetMaintenance\)/);

    await deleteAndWaitForListener(pool.name);
  });

  it('survives session conflicts, expired tokens, a lost session, redelivery, a slow poll and 5xx without losing or re-applying a message', async () => {
    stack.sim.setFault({ kind: 'session-conflict', times: 2 });
    const pool = scaleSetPool({ maxRunners: 2 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const first = await listening(pool.name);
    expect(first.sessionsOpened).toBe(1);

    stack.sim.setFault({ kind: 'expire-token', operation: 'get-message', times: 1 });
    stack.sim.setFault({ kind: 'expire-token', operation: 'acquire-jobs', times: 1 });
    stack.sim.setFault({ kind: 'server-error', operation: 'get-message', status: 503, times: 2 });
    stack.sim.setFault({ kind: 'latency', operation: 'get-message', ms: 1_500, times: 1 });
    const batch1 = [1, 2].map(() => stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] }).id);
    await allDone(batch1);

    stack.sim.setFault({ kind: 'redeliver-message', times: 2 });
    stack.sim.setFault({ kind: 'lose-session', times: 1 });
    const batch2 = [1, 2].map(() => stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] }).id);
    await allDone(batch2);

    const settled = await eventually(async () => {
      const s = await listenerState(stack.client, pool.name);
      const set = stack.sim.scaleSets().find((x) => x.id === s?.scaleSetId);
      return s && set && set.messages.pending === 0 && s.statistics?.totalAssignedJobs === 0 ? { s, set } : undefined;
    }, 30_000, 'every message acknowledged');
    expect(settled.s.jobsAcquired).toBe(4);
    expect(settled.s.sessionsOpened).toBe(2);
    expect(settled.s.redeliveriesSkipped).toBeGreaterThanOrEqual(1);
    expect(settled.s.messagesApplied).toBe(settled.set.messages.deleted);
    const ids = settled.s.recentMessageIds;
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('refuses a second listener for the same scale set: the pool id is taken, and another listener waits on the 409', async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const owner = await listening(pool.name);

    // A stop asking to delete the scale set waits this long for the owner's session to lapse.
    const timings = resolveTimings({ ...SCALE_SET_TIMINGS, scaleSetHeldSessionWait: 1_500 });
    const intruderPool = uniqueName('intruder').toLowerCase();
    const input: ScaleSetListenerInput = {
      settings: {
        pool: intruderPool,
        target: { credentials: 'default', scope: pool.github.scope },
        name: pool.name,
        runnerGroup: 'Default',
        labels: [],
        minRunners: 0,
        maxRunners: 1,
        ownerName: sessionOwnerName('elsewhere', intruderPool),
      },
      timings,
      // Small, so that the refused attempts below fill it several times over.
      historyLimit: 25,
    };
    const taskQueue = stack.loaded.config.temporal.taskQueue;
    await expect(
      stack.client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(pool.name), taskQueue, args: [input] }),
    ).rejects.toThrow(/already started/i);

    const intruder = await stack.client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, { workflowId: scaleSetListenerId(intruderPool), taskQueue, args: [input] });
    const refused = await eventually(async () => {
      const s = await intruder.query(scaleSetStateQuery);
      return s.status === 'conflict' ? s : undefined;
    }, 20_000, 'second listener in conflict');
    expect(refused.scaleSetId).toBe(owner.scaleSetId);
    // What an operator reads: whose session is in the way, how often it is asked for, and when the wait ends by itself.
    expect(refused.lastError).toMatch(new RegExp(`^another session holds scale set ${owner.scaleSetId}; asked for again every \\d+ m?s\\. A session nobody polls .* lapses`));
    // Several conflict retries later it still holds no session, and the owner still listens.
    await new Promise((r) => setTimeout(r, 2_000));
    const later = await intruder.query(scaleSetStateQuery);
    expect(later.sessionsOpened).toBe(0);
    expect(later.sessionId).toBeUndefined();
    // Waiting on another listener does not grow one history without bound: it continues as new.
    const current = await eventually(async () => {
      const d = await stack.client.workflow.getHandle(scaleSetListenerId(intruderPool)).describe();
      return d.runId !== intruder.firstExecutionRunId ? d : undefined;
    }, 20_000, 'the waiting listener continued as new');
    expect(current.historyLength).toBeLessThan(60);
    expect((await listenerState(stack.client, pool.name))?.sessionId).toBe(owner.sessionId);
    // Stopping it, even with deleteScaleSet, leaves the scale set to the listener that holds it:
    // the owner polls its session, which does not lapse however long the intruder waits.
    await intruder.signal(stopListenerSignal, { reason: 'test over', deleteScaleSet: true });
    const stopped = await intruder.result();
    expect(stopped.status).toBe('stopped');
    expect(stopped.sessionsOpened).toBe(0);
    expect(stopped.lastError).toMatch(new RegExp(`scale set ${owner.scaleSetId} left at GitHub: another session still holds it`));
    expect(stack.sim.scaleSets().find((x) => x.id === owner.scaleSetId)?.session?.sessionId).toBe(owner.sessionId);
  });
});
