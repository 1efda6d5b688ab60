import { describe, expect, it } from 'vitest';
import {
  deletePoolSignal,
  jobProgressSignal,
  jobQueuedSignal,
  jobsUnmatchedSignal,
  poolStateQuery,
  runnerChangedSignal,
  runnersChangedSignal,
  UNMATCHED_JOBS_WORKFLOW,
  unmatchedJobSignal,
  unmatchedJobsQuery,
  updatePoolSignal,
} from '../../workflows/pool-messages';
import { scaleSetDemandSignal } from '../../workflows/scale-set-messages';
import { eventually, uniqueName, useTestWorker } from '../support/temporal';
import { poolSettings, startPool } from './helpers';

const env = useTestWorker();

/**
 * Signals reach these workflows from scripts, the Web UI and people typing JSON. A handler that
 * threw on one would fail the workflow task, and every retry of it, for good.
 */
describe('malformed signals', () => {
  it('are ignored by a pool, which goes on deciding', async () => {
    const settings = poolSettings({ maxRunners: 3 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings });
    // Sent as a person might from the Web UI or the temporal CLI: wrong shapes, missing input.
    const untyped = pool as unknown as { signal(name: string, ...args: unknown[]): Promise<void> };
    await untyped.signal(updatePoolSignal.name);
    await untyped.signal(updatePoolSignal.name, {});
    await untyped.signal(updatePoolSignal.name, { settings: { ...settings, maxRunners: 'lots' } });
    await untyped.signal(jobProgressSignal.name);
    await untyped.signal(jobProgressSignal.name, { jobId: 'x', action: 'completed' });
    await untyped.signal(runnerChangedSignal.name, { name: 5 });
    await untyped.signal(runnersChangedSignal.name);
    await untyped.signal(runnersChangedSignal.name, { reports: [null, { name: 'r', seq: 1, status: 'nonsense', runnerStatus: 'idle' }] });
    await untyped.signal(scaleSetDemandSignal.name, {});

    await pool.signal(jobQueuedSignal, { jobId: 41, labels: ['linux'] });
    const view = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return v.runners.length === 1 ? v : undefined;
    }, 20_000, 'a runner for the queued job');
    // The bad settings changed nothing.
    expect(view.settings.maxRunners).toBe(3);
    const history = await pool.fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toHaveLength(0);

    // A change of mode is refused, as the API refuses it: a webhook pool does not become a scale set.
    await pool.signal(updatePoolSignal, { settings: { ...settings, mode: 'scaleSet', maxRunners: 4 } });
    await pool.signal(jobQueuedSignal, { jobId: 42, labels: ['linux'] });
    await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 2 ? true : undefined), 20_000, 'a runner for the next job');
    expect((await pool.query(poolStateQuery)).settings).toMatchObject({ mode: 'webhook', maxRunners: 3 });

    // Extra specs past the cap the API keeps would make every batch of starts too large: refused.
    await pool.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 4, extraSpecs: { template: 'x'.repeat(20_000) } } });
    await pool.signal(jobQueuedSignal, { jobId: 43, labels: ['linux'] });
    await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 3 ? true : undefined), 20_000, 'a runner for the third job');
    expect((await pool.query(poolStateQuery)).settings).toMatchObject({ maxRunners: 3, extraSpecs: {} });

    // So would an image or labels past the cap on what else every runner carries.
    await pool.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 4, image: 'i'.repeat(9_000) } });
    await pool.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 4, labels: Array.from({ length: 40 }, (_, i) => `${i}-${'l'.repeat(250)}`) } });
    await pool.signal(jobQueuedSignal, { jobId: 44, labels: ['linux'] });
    await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 3 ? true : undefined), 20_000, 'the runners so far');
    expect((await pool.query(poolStateQuery)).settings).toMatchObject({ maxRunners: 3, image: settings.image, labels: settings.labels });

    // A fraction of a millisecond is no duration a timer keeps.
    await pool.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 4, idleTimeout: 90_000.5 } });
    await pool.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 4, bootstrapTimeout: '0.0001ms' } as never });
    await pool.signal(jobQueuedSignal, { jobId: 45, labels: ['linux'] });
    await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 3 ? true : undefined), 20_000, 'the runners so far');
    expect((await pool.query(poolStateQuery)).settings).toMatchObject({ maxRunners: 3, idleTimeout: settings.idleTimeout, bootstrapTimeout: settings.bootstrapTimeout });

    // A valid update still applies.
    await pool.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 4 } });
    await eventually(async () => ((await pool.query(poolStateQuery)).settings.maxRunners === 4 ? true : undefined), 10_000, 'settings updated');
    await pool.signal(deletePoolSignal, {});
    expect((await pool.result()).runners).toEqual([]);
  });

  it('are ignored by the unmatched-jobs record, which keeps the valid jobs', async () => {
    const handle = await env.client.workflow.start(UNMATCHED_JOBS_WORKFLOW, { taskQueue: env.w.taskQueue, workflowId: uniqueName('unmatched'), args: [[]] });
    const untyped = handle as unknown as { signal(name: string, ...args: unknown[]): Promise<void> };
    await untyped.signal(unmatchedJobSignal.name);
    await untyped.signal(jobsUnmatchedSignal.name);
    await untyped.signal(jobsUnmatchedSignal.name, { jobs: [null, { jobId: -1 }] });
    await handle.signal(jobsUnmatchedSignal, { jobs: [{ jobId: 7, labels: ['gpu'], reason: 'no pool has label gpu' }] });
    const jobs = await eventually(async () => {
      const list = await handle.query(unmatchedJobsQuery);
      return list.length > 0 ? list : undefined;
    }, 10_000, 'the valid job recorded');
    expect(jobs).toEqual([expect.objectContaining({ jobId: 7, reason: 'no pool has label gpu' })]);
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toHaveLength(0);
    await handle.terminate('test over');
  });
});
