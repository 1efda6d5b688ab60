/**
 * A scale-set pool that takes no jobs (disabled, or being deleted) must not let its listener take
 * them from the scale set either; and deleting the pool removes the scale set even when the
 * service will not close the session.
 */
import { describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { eventually } from '../support/temporal';
import { listenerState, poolShow, scaleSetPool, useScaleSetStack } from './support/stack';

const stack = useScaleSetStack(500);

async function listening(pool: string) {
  return eventually(async () => {
    const s = await listenerState(stack.client, pool);
    return s?.status === 'listening' && s.scaleSetId !== undefined ? s : undefined;
  }, 30_000, `listener of ${pool} listening`);
}

/** Every message of the scale set acknowledged: the listener has seen all there is. */
async function allAcknowledged(scaleSetId: number): Promise<void> {
  await eventually(() => {
    const set = stack.sim.scaleSets().find((x) => x.id === scaleSetId);
    return set !== undefined && set.messages.pending === 0;
  }, 20_000, `messages of scale set ${scaleSetId} acknowledged`);
}

function unacquired(jobId: number): boolean {
  const job = stack.sim.jobs().find((j) => j.id === jobId);
  return job?.status === 'queued' && !job.acquired;
}

async function scaleSetGone(scaleSetId: number): Promise<void> {
  await eventually(() => !stack.sim.scaleSets().some((x) => x.id === scaleSetId), 30_000, `scale set ${scaleSetId} deleted`);
}

describe('a scale-set pool that takes no jobs', () => {
  it('when disabled, has its listener acquire none and ask for no capacity; enabled again, it acquires the jobs it passed over', async () => {
    const pool = scaleSetPool({ maxRunners: 2, enabled: false });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const s = await listening(pool.name);
    const job = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await allAcknowledged(s.scaleSetId!);
    expect((await listenerState(stack.client, pool.name))?.jobsAcquired).toBe(0);
    expect(unacquired(job.id)).toBe(true);
    await eventually(() => stack.sim.scaleSetMaxCapacity(s.scaleSetId!) === 0, 10_000, 'capacity 0 asked for');

    // Enabled again, it asks for its capacity again, at once rather than after the poll out.
    const shown = (await apiRequest(stack, 'GET', `/api/v1/pools/${pool.name}`)).body as { settings: Record<string, unknown> };
    expect((await apiRequest(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...shown.settings, enabled: true })).status).toBeLessThan(300);
    await eventually(() => stack.sim.scaleSetMaxCapacity(s.scaleSetId!) === 2, 10_000, 'capacity 2 asked for');
    // No message offers the job passed over again: the listener lists what waits and takes it.
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, 'the job passed over while disabled');
    expect((await listenerState(stack.client, pool.name))?.waitingJobsAcquired).toBe(1);
    const cli = await poolShow(stack, pool.name);
    expect(cli).toMatch(/Messages applied:\s+\d+ \(jobs acquired 1, 1 of them no message offered\)/);
    const next = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await eventually(() => stack.sim.jobs().find((j) => j.id === next.id && j.status === 'completed'), 30_000, 'a job after enabling it');
  });

  it('when deleted while a runner is busy, takes no new job while that runner finishes', async () => {
    const pool = scaleSetPool({ maxRunners: 2 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const s = await listening(pool.name);
    const busy = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name], durationMs: 8_000 });
    await eventually(() => stack.sim.jobs().find((j) => j.id === busy.id && j.status === 'in_progress'), 30_000, 'a busy runner');

    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await eventually(() => stack.sim.scaleSetMaxCapacity(s.scaleSetId!) === 0, 10_000, 'capacity 0 asked for');
    const late = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await allAcknowledged(s.scaleSetId!);
    expect(unacquired(late.id)).toBe(true);

    // The busy runner still finishes its job, and then the scale set goes.
    await scaleSetGone(s.scaleSetId!);
    expect(stack.sim.jobs().find((j) => j.id === busy.id)).toMatchObject({ status: 'completed', conclusion: 'success' });
    const final = await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
    expect(final).toMatchObject({ status: 'stopped', jobsAcquired: 1 });
  });
});

describe('deleting a scale-set pool', () => {
  it('deletes the scale set although the service answers the session close with "session expired"', async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const s = await listening(pool.name);
    stack.sim.setFault({ kind: 'session-expired-on-delete', times: 1 });
    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await scaleSetGone(s.scaleSetId!);
    const final = await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
    expect(final).toMatchObject({ status: 'stopped' });
    expect(final.sessionId).toBeUndefined();
  });

  it('deletes the scale set although closing the session keeps failing', async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const s = await listening(pool.name);
    stack.sim.setFault({ kind: 'server-error', operation: 'delete-session', status: 503 });
    try {
      expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
      await scaleSetGone(s.scaleSetId!);
      const final = await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
      expect(final).toMatchObject({ status: 'stopped', lastError: expect.stringMatching(/delete_session/) });
    } finally {
      stack.sim.clearFaults();
    }
  });
});
