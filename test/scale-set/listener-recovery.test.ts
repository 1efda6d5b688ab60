/**
 * A listener that stops or fails is not the end of its pool's jobs: a new listener for the same
 * scale set is heard by the pool, and a listener whose calls the service refuses keeps trying.
 */
import { describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { poolSettingsSchema } from '../../domain/pool';
import { sessionOwnerName } from '../../domain/scale-set';
import { resolveTimings } from '../../domain/timings';
import { deletePoolSignal, jobProgressSignal, poolWorkflowId, RUNNER_POOL_WORKFLOW } from '../../workflows/pool-messages';
import {
  SCALE_SET_LISTENER_WORKFLOW,
  scaleSetListenerId,
  scaleSetStateQuery,
  stopListenerSignal,
  type ScaleSetListenerInput,
  type ScaleSetView,
} from '../../workflows/scale-set-messages';
import { RUNNER_POOL } from '../../workflows/search-attributes';
import { eventually, uniqueName } from '../support/temporal';
import { listenerState, SCALE_SET_TIMINGS, scaleSetPool, useScaleSetStack } from './support/stack';

const stack = useScaleSetStack(500);

/** The listener listening; with `other`, a listener run other than that one. */
async function listening(pool: string, other?: string): Promise<ScaleSetView & { runId: string }> {
  return eventually(async () => {
    const s = await listenerState(stack.client, pool);
    if (s?.status !== 'listening' || s.scaleSetId === undefined) return undefined;
    const { runId } = await stack.client.workflow.getHandle(scaleSetListenerId(pool)).describe();
    return runId !== other ? { ...s, runId } : undefined;
  }, 30_000, `listener of ${pool} listening`);
}

async function completed(ids: number[]): Promise<void> {
  await eventually(() => stack.sim.jobs().filter((j) => ids.includes(j.id) && j.status === 'completed').length === ids.length, 45_000, `jobs ${ids.join(', ')} completed`);
}

describe('a new listener for the same scale set', () => {
  it('is heard by the pool, although it numbers its reports from the start again', { timeout: 120_000 }, async () => {
    const settings = poolSettingsSchema.parse(scaleSetPool({ maxRunners: 2 }));
    const pool = await stack.client.workflow.start(RUNNER_POOL_WORKFLOW, {
      workflowId: poolWorkflowId(settings.name),
      taskQueue: stack.loaded.config.temporal.taskQueue,
      args: [{ settings, timings: resolveTimings(SCALE_SET_TIMINGS), historyLimit: 150 }],
      typedSearchAttributes: [{ key: RUNNER_POOL, value: settings.name }],
    });
    const first = await listening(settings.name);
    const jobs = [1, 2, 3].map(() => stack.sim.queueJob({ repository: 'acme/app', labels: [settings.name] }).id);
    await completed(jobs);
    const old = await eventually(async () => {
      const s = await listenerState(stack.client, settings.name);
      return s?.statistics?.totalAssignedJobs === 0 ? s : undefined;
    }, 30_000, 'the first listener saw every job complete');

    // An operator stops the listener; the pool's next run starts another on the same scale set.
    await stack.client.workflow.getHandle(scaleSetListenerId(settings.name)).signal(stopListenerSignal, { reason: 'test' });
    await stack.client.workflow.getHandle(scaleSetListenerId(settings.name)).result();
    const run = (await pool.describe()).runId;
    for (let i = 0; (await pool.describe()).runId === run; i++) {
      if (i > 200) throw new Error('the pool did not continue as new');
      await pool.signal(jobProgressSignal, { jobId: 900_000 + i, action: 'completed' });
    }
    const fresh = await listening(settings.name, first.runId);
    expect(fresh.scaleSetId).toBe(first.scaleSetId);
    expect(fresh.demandSeq).toBeLessThan(old.demandSeq);

    const later = stack.sim.queueJob({ repository: 'acme/app', labels: [settings.name] }).id;
    await completed([later]);
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });
});

describe('a listener whose calls the service refuses', () => {
  it('shows the failure, keeps trying, and listens once the cause is gone', async () => {
    const group = uniqueName('later-group');
    const pool = scaleSetPool({ maxRunners: 1, runnerGroup: group });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const failing = await eventually(async () => {
      const s = await listenerState(stack.client, pool.name);
      return s?.status === 'failing' && (s.consecutiveFailures ?? 0) >= 2 ? s : undefined;
    }, 30_000, 'the listener failing');
    expect(failing.lastError).toMatch(/runner group/);
    const shown = await apiRequest(stack, 'GET', `/api/v1/pools/${pool.name}`);
    expect(shown.body).toMatchObject({ scaleSet: { status: 'failing', lastError: expect.stringMatching(/runner group/) } });

    // Queued before its scale set exists: the service offers it once the scale set is made.
    const job = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] }).id;
    stack.sim.addRunnerGroup(group);
    const recovered = await listening(pool.name);
    expect(recovered.lastError).toBeUndefined();
    await completed([job]);
    expect((await listenerState(stack.client, pool.name))?.consecutiveFailures ?? 0).toBe(0);
  });

  it('closes its session when a call fails for good, and opens a new one after a pause', async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const before = await listening(pool.name);
    const closes = stack.sim.stats().actionsCalls['delete-session'] ?? 0;
    stack.sim.setFault({ kind: 'server-error', operation: 'acquire-jobs', status: 400, times: 2 });
    const job = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] }).id;
    await completed([job]);
    const after = await listenerState(stack.client, pool.name);
    expect(after?.sessionsOpened).toBeGreaterThanOrEqual(before.sessionsOpened + 2);
    expect(stack.sim.stats().actionsCalls['delete-session'] ?? 0).toBeGreaterThanOrEqual(closes + 2);
    expect(after?.jobsAcquired).toBe(1);
  });

  it('keeps its history bounded while it fails, and still shows why', async () => {
    const name = uniqueName('nogroup').toLowerCase();
    const input: ScaleSetListenerInput = {
      settings: {
        pool: name,
        target: { credentials: 'default', scope: { kind: 'org', org: 'acme' } },
        name,
        runnerGroup: uniqueName('missing-group'),
        labels: [],
        minRunners: 0,
        maxRunners: 1,
        ownerName: sessionOwnerName('test', name),
      },
      timings: resolveTimings({ ...SCALE_SET_TIMINGS, githubMaxInterval: 300 }),
      historyLimit: 30,
    };
    const handle = await stack.client.workflow.start(SCALE_SET_LISTENER_WORKFLOW, {
      workflowId: scaleSetListenerId(name),
      taskQueue: stack.loaded.config.temporal.taskQueue,
      args: [input],
    });
    const current = await eventually(async () => {
      const d = await stack.client.workflow.getHandle(scaleSetListenerId(name)).describe();
      return d.runId !== handle.firstExecutionRunId ? d : undefined;
    }, 30_000, 'the failing listener continued as new');
    expect(current.historyLength).toBeLessThan(80);
    const state = await stack.client.workflow.getHandle(scaleSetListenerId(name)).query(scaleSetStateQuery);
    expect(state).toMatchObject({ status: 'failing', lastError: expect.stringMatching(/runner group/) });
    await stack.client.workflow.getHandle(scaleSetListenerId(name)).signal(stopListenerSignal, { reason: 'test over' });
    expect((await stack.client.workflow.getHandle(scaleSetListenerId(name)).result()).status).toBe('stopped');
  });
});
