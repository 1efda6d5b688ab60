/**
 * A pool's start step whose worker died: the pool starts runners from an activity, and a worker
 * that dies while one runs used to leave it to the step's whole time limit (a minute) before it
 * was tried again. Meanwhile the runners it was starting held capacity, and a pool whose history
 * was full could not continue as new, so it made no runner at all. The step heartbeats now, and
 * the server tries it again once the heartbeats stop.
 */
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createPoolActivities, type StartRunnersArgs } from '../../activities/pool-activities';
import { runnerWorkflowId } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { eventually, FAST_TIMINGS, useTestWorker } from '../support/temporal';
import { poolSettings, startPool } from './helpers';

const attempts: number[] = [];

/** The first attempt behaves as one on a worker that died: it never answers and never heartbeats. */
async function startRunnersOnADyingWorker(args: StartRunnersArgs) {
  const ctx = Context.current();
  attempts.push(ctx.info.attempt);
  if (ctx.info.attempt === 1) {
    // Until this worker shuts down (the test's end), so it leaves nothing running.
    await new Promise<void>((resolve) => ctx.cancellationSignal.addEventListener('abort', () => resolve()));
    throw new Error('the worker went away');
  }
  // As the worker's own step does: a client on the worker's connection, which eager starts need.
  return createPoolActivities({ client: new Client({ connection: env.w.connection }) }).startRunners(args);
}

const env = useTestWorker({ extraActivities: { startRunners: startRunnersOnADyingWorker } });

describe('a pool start step whose worker died', () => {
  it('is tried again once its heartbeats stop, not when its time limit runs out', async () => {
    const settings = poolSettings({ minIdleRunners: 1 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, poolStepHeartbeatTimeoutMs: 1_000 } });
    try {
      const [name] = await eventually(async () => {
        const names = (await pool.query(poolStateQuery)).runners.map((r) => r.name);
        return names.length === 1 ? names : undefined;
      }, 10_000, 'a runner counted');
      // The step's time limit is a minute: the runner's workflow exists well before it.
      const started = Date.now();
      await eventually(() => env.client.workflow.getHandle(runnerWorkflowId(name!)).describe().then(() => true).catch(() => undefined), 20_000, 'the runner workflow started by a second attempt');
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(attempts.slice(0, 2)).toEqual([1, 2]);
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  }, 60_000);
});
