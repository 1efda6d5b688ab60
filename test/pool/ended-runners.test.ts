/**
 * A runner workflow that ends without telling its pool (an operator ran
 * `temporal workflow terminate` on it) must not hold the pool's capacity for
 * good, nor keep a deleted pool from closing.
 */
import { describe, expect, it } from 'vitest';
import { runnerWorkflowId } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { eventually, FAST_TIMINGS, useTestWorker } from '../support/temporal';
import { autoRegister, idleRunners, poolSettings, startPool } from './helpers';

const env = useTestWorker();

describe('a runner whose workflow ended unreported', () => {
  it('is dropped from the book when the pool asks it to leave, so a deleted pool closes', async () => {
    const settings = poolSettings({ minIdleRunners: 2, maxRunners: 2 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, leaveReaskIntervalMs: 500 } });
    const agents = autoRegister(env.client, pool);
    const [ended, kept] = await eventually(async () => {
      const idle = idleRunners(await pool.query(poolStateQuery));
      return idle.length === 2 ? idle : undefined;
    }, 20_000, 'two idle runners');
    agents.stop();
    await env.client.workflow.getHandle(runnerWorkflowId(ended!)).terminate('operator removed it by hand');

    await pool.signal(deletePoolSignal, {});
    const final = await pool.result();
    expect(final.runners).toEqual([]);
    // The other runner left the ordinary way, and its machine with it.
    expect(env.w.fake.instance(kept!)).toBeUndefined();
  });
});
