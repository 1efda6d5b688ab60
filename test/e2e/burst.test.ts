import { expect, it } from 'vitest';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { eventually } from '../support/temporal';
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
  const view = await eventually(async () => {
    const v = await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery);
    return v.runners.length === 0 && v.queuedJobs.length === 0 ? v : undefined;
  }, 60_000, 'pool drained');
  expect(view.target).toBe(0);
}, 360_000);
