import { expect, it } from 'vitest';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { SIMULATED_PROVIDER } from '../../devstack/stack';
import { providerSweep } from '../../workflows/provider-sweep';
import { eventually, uniqueName } from '../support/temporal';
import { api, e2ePool, useE2EStack } from './stack';

const stack = useE2EStack({ jobDurationMs: 100 });

it('a burst of 300 queued jobs never has more than maxRunners alive and drains every job', async () => {
  // An idle timeout well inside the wait for the drained pool below: a runner made for a job that
  // another runner took first waits that long for a job of its own before it leaves.
  const pool = e2ePool('burst', { maxRunners: 20, idleTimeout: 10_000 });
  expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
  const labels = ['self-hosted', 'linux', 'burst'];
  const jobs = Array.from({ length: 300 }, () => stack.sim.queueJob({ repository: 'acme/burst', labels }));
  const ids = new Set(jobs.map((j) => j.id));

  let maxMachines = 0;
  let maxPoolRunners = 0;
  let sampling = true;
  const sampler = (async () => {
    const handle = stack.client.workflow.getHandle(poolWorkflowId(pool.name));
    while (sampling) {
      maxMachines = Math.max(maxMachines, stack.machines.instances().filter((m) => m.poolId === pool.name).length);
      try {
        maxPoolRunners = Math.max(maxPoolRunners, (await handle.query(poolStateQuery)).runners.length);
      } catch {
        // continuing as new: sample again
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  try {
    await eventually(() => stack.sim.jobs().filter((j) => ids.has(j.id) && j.status === 'completed').length === 300, 240_000, 'all 300 jobs completed');
  } finally {
    sampling = false;
    await sampler;
  }
  expect(maxMachines).toBeGreaterThan(1);
  expect(maxMachines).toBeLessThanOrEqual(20);
  expect(maxPoolRunners).toBeLessThanOrEqual(20);
  expect(stack.sim.jobs().filter((j) => ids.has(j.id) && j.conclusion !== 'success')).toEqual([]);
  // Every job ran on its own ephemeral runner.
  expect(new Set(stack.sim.jobs().filter((j) => ids.has(j.id)).map((j) => j.runnerName)).size).toBe(300);
  // A job whose `in_progress` and `completed` deliveries both failed (a loaded machine) stays
  // queued in the pool, and holds an idle runner, until the sweep looks it up at GitHub. The
  // sweep runs every few seconds here, as its schedule would with a short interval.
  const sweepNow = () =>
    stack.client.workflow.execute(providerSweep, {
      taskQueue: stack.loaded.config.temporal.taskQueue,
      workflowId: uniqueName('sweep/burst'),
      args: [{ provider: SIMULATED_PROVIDER, gracePeriodMs: 3_600_000, githubRunners: true, lostJobAgeMs: 0 }],
    });
  const dequeued: unknown[] = [];
  let sweptAt = Date.now();
  let left = '';
  const view = await eventually(async () => {
    const v = await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery);
    left = JSON.stringify({ runners: v.runners, queuedJobs: v.queuedJobs, target: v.target });
    if (v.runners.length === 0 && v.queuedJobs.length === 0) return v;
    if (Date.now() - sweptAt > 5_000) {
      dequeued.push(...((await sweepNow()).github?.dequeued ?? []));
      sweptAt = Date.now();
    }
    return undefined;
  }, 60_000, 'pool drained').catch((err: Error) => {
    throw new Error(`${err.message}; pool still holds ${left}; the sweep took out ${JSON.stringify(dequeued)}, webhooks ${JSON.stringify(stack.sim.stats().webhooks)}`);
  });
  expect(view.target).toBe(0);
}, 360_000);
