/**
 * A pool that stops taking jobs (deleted, disabled) passes the jobs it holds,
 * and any routed to it before routing knew, on to a pool that can take them;
 * with none, they are recorded as unmatched. Held, they would get no runner,
 * and the pool would go on claiming them from the look for lost jobs.
 */
import { describe, expect, it } from 'vitest';
import { jobCompletedSignal, jobStartedSignal, runnerWorkflowId } from '../../workflows/messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import {
  deletePoolSignal,
  jobsQueuedSignal,
  poolStateQuery,
  poolWorkflowId,
  unmatchedJobsQuery,
  unmatchedJobsWorkflowId,
  updatePoolSignal,
  type PoolView,
  type QueuedJob,
  type RunnerPoolInput,
} from '../../workflows/pool-messages';
import { runnerPool } from '../../workflows/runner-pool';
import { eventually, FAST_TIMINGS, uniqueName, useTestWorker } from '../support/temporal';
import { autoRegister, idleRunners, poolSettings } from './helpers';

const env = useTestWorker();

/** A pool started as the API starts one: with the memo job routing reads. */
async function startRoutablePool(settings: RunnerPoolInput['settings']) {
  const handle = await env.client.workflow.start(runnerPool, {
    taskQueue: env.w.taskQueue,
    workflowId: poolWorkflowId(settings.name),
    args: [{ settings, timings: FAST_TIMINGS }],
    memo: { ...poolMemoOf(settings) },
  });
  // Routing reads visibility, which lags a start.
  await eventually(async () => {
    for await (const info of env.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}' AND ExecutionStatus = 'Running'` })) if (info.memo) return true;
    return undefined;
  }, 20_000, `${settings.name} listed`);
  return handle;
}

const jobIds = (view: PoolView) => view.queuedJobs.map((j) => j.jobId).sort((a, b) => a - b);

describe('a pool that stops taking jobs passes them on', () => {
  it('a deleted pool hands its queued jobs, and those that reach it while it drains, to the other pool with the labels', async () => {
    // Labels of this test alone: visibility lists every test's pools.
    const labels = [uniqueName('lbl').toLowerCase()];
    // Room for one runner, which takes a job and keeps the pool draining after its delete.
    const closing = await startRoutablePool(poolSettings({ labels, maxRunners: 1 }));
    const other = await startRoutablePool(poolSettings({ labels, maxRunners: 0 }));
    const agents = autoRegister(env.client, closing);
    const jobs: QueuedJob[] = [100, 101, 102, 103].map((jobId) => ({ jobId, labels, repository: 'acme/widgets' }));
    await closing.signal(jobsQueuedSignal, { jobs });
    const busy = await eventually(async () => idleRunners(await closing.query(poolStateQuery))[0], 20_000, 'an idle runner');
    agents.stop();
    env.w.github.busy.add(busy);
    await env.client.workflow.getHandle(runnerWorkflowId(busy)).signal(jobStartedSignal, { jobId: 100 });
    await eventually(async () => ((await closing.query(poolStateQuery)).queuedJobCount === 3 ? true : undefined), 10_000, 'job 100 taken, three queued');

    await closing.signal(deletePoolSignal, {});
    await eventually(async () => jobIds(await other.query(poolStateQuery)).join() === '101,102,103' || undefined, 20_000, 'the queue passed on');
    // Marked for routing while it drains.
    expect((await closing.describe()).memo).toMatchObject({ deleting: true });
    // Routed before the intake saw the pool was being deleted.
    await closing.signal(jobsQueuedSignal, { jobs: [{ jobId: 104, labels, repository: 'acme/widgets' }] });
    await eventually(async () => jobIds(await other.query(poolStateQuery)).join() === '101,102,103,104' || undefined, 20_000, 'the late job passed on');
    expect((await closing.query(poolStateQuery)).queuedJobCount).toBe(0);

    env.w.github.busy.delete(busy);
    await env.client.workflow.getHandle(runnerWorkflowId(busy)).signal(jobCompletedSignal, { jobId: 100, conclusion: 'success' });
    await closing.result();
    await other.signal(deletePoolSignal, {});
    await other.result();
  });

  it('a disabled pool hands its jobs on, and records those no other pool can take as unmatched', async () => {
    const labels = [uniqueName('lbl').toLowerCase()];
    const settings = poolSettings({ labels, maxRunners: 0 });
    const pool = await startRoutablePool(settings);
    await pool.signal(jobsQueuedSignal, { jobs: [{ jobId: 201, labels, repository: 'acme/widgets' }] });
    await eventually(async () => ((await pool.query(poolStateQuery)).queuedJobCount === 1 ? true : undefined), 10_000, 'a job queued');

    await pool.signal(updatePoolSignal, { settings: { ...settings, enabled: false } });
    const record = env.client.workflow.getHandle(unmatchedJobsWorkflowId(env.w.taskQueue));
    const recorded = await eventually(async () => {
      const unmatched = await record.query(unmatchedJobsQuery).catch(() => []);
      return unmatched.find((j) => j.jobId === 201);
    }, 20_000, 'the job recorded as unmatched');
    expect(recorded.reason).toBe(`no pool has the labels ${labels[0]} (${pool.workflowId} takes no jobs now)`);
    const view = await pool.query(poolStateQuery);
    expect(view.queuedJobCount).toBe(0);
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });
});
