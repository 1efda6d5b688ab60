/**
 * A static runner keeps naming its last job once it is idle again: the job lookup says the job
 * is finished, not running. A real pool and runner on the real server, told of the job as the
 * webhooks tell them.
 */
import { expect, it } from 'vitest';
import { findJob } from '../../api/job-whereabouts';
import { jobCompletedSignal, jobStartedSignal, runnerWorkflowId } from '../../workflows/messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { deletePoolSignal, poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { autoRegister, idleRunners, poolSettings, startPool } from '../pool/helpers';
import { eventually, useTestWorker } from '../support/temporal';

const env = useTestWorker();

it("a static runner's job is running while it runs, and finished once the runner is idle again", async () => {
  const settings = poolSettings({ ephemeral: false, minIdleRunners: 1, maxRunners: 1 });
  const pool = await startPool(env.client, env.w.taskQueue, { settings });
  const agents = autoRegister(env.client, pool);
  try {
    const name = await eventually(async () => idleRunners(await pool.query(poolStateQuery))[0], 30_000, 'an idle runner');
    const entry = { name: settings.name, workflowId: poolWorkflowId(settings.name), runId: '', startTime: '', memo: poolMemoOf(settings) };
    const lookup = (state: string) =>
      eventually(async () => {
        const found = await findJob({ client: env.client, pools: [entry], unmatched: async () => [], queryTimeoutMs: 5_000 }, 42);
        return found?.state === state ? found : undefined;
      }, 20_000, `job 42 to be ${state}`);
    const runner = env.client.workflow.getHandle(runnerWorkflowId(name));
    await runner.signal(jobStartedSignal, { jobId: 42 });
    expect(await lookup('running')).toMatchObject({ pool: settings.name, runner: { name, runnerStatus: 'active' } });
    await runner.signal(jobCompletedSignal, { jobId: 42 });
    expect(await lookup('finished')).toMatchObject({ pool: settings.name, runner: { name, runnerStatus: 'idle' } });
  } finally {
    agents.stop();
    await pool.signal(deletePoolSignal, {});
  }
});
