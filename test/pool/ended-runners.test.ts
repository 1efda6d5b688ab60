/**
 * A runner workflow that ends without telling its pool (an operator ran
 * `temporal workflow terminate` on it) must not hold the pool's capacity for
 * good, nor keep a deleted pool from closing.
 */
import { describe, expect, it } from 'vitest';
import { jobStartedSignal, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery, type PoolView } from '../../workflows/pool-messages';
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

describe('a pool looking for runners whose workflow ended unreported', () => {
  const auditTimings = { ...FAST_TIMINGS, poolAuditIntervalMs: 1_000 };
  const names = (view: PoolView): string[] => view.runners.map((r) => r.name);

  it('replaces an idle runner terminated by hand, and leaves the others alone', async () => {
    // At its minimum, the pool never asks an idle runner to leave: only its own look finds out.
    const settings = poolSettings({ minIdleRunners: 2, maxRunners: 2 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: auditTimings });
    const agents = autoRegister(env.client, pool);
    const [ended, kept] = await eventually(async () => {
      const idle = idleRunners(await pool.query(poolStateQuery));
      return idle.length === 2 ? idle : undefined;
    }, 20_000, 'two idle runners');
    await env.client.workflow.getHandle(runnerWorkflowId(ended!)).terminate('operator removed it by hand');

    const view = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return !names(v).includes(ended!) && idleRunners(v).length === 2 ? v : undefined;
    }, 20_000, 'the terminated runner replaced');
    expect(names(view)).toContain(kept!);
    expect(view.runners).toHaveLength(2);
    agents.stop();
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });

  it('frees the capacity a busy runner terminated by hand held, once GitHub no longer calls it busy', async () => {
    const settings = poolSettings({ minIdleRunners: 1, maxRunners: 1 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: auditTimings });
    const agents = autoRegister(env.client, pool);
    const [busy] = await eventually(async () => {
      const idle = idleRunners(await pool.query(poolStateQuery));
      return idle.length === 1 ? idle : undefined;
    }, 20_000, 'one idle runner');
    await env.client.workflow.getHandle(runnerWorkflowId(busy!)).signal(jobStartedSignal, { jobId: 4242 });
    await eventually(async () => ((await pool.query(poolStateQuery)).runners.find((r) => r.name === busy)?.runnerStatus === 'active' ? true : undefined), 20_000, 'the runner busy');
    env.w.github.busy.add(busy!);
    await env.client.workflow.getHandle(runnerWorkflowId(busy!)).terminate('operator removed it by hand');

    // Its machine still runs the job: a new runner beside it would be one more than maxRunners.
    // The pool looks (GitHub is asked about it, and says busy) and holds its place.
    await eventually(() => env.w.github.calls.some((c) => c.op === 'find' && c.name === busy && c.outcome === 'busy') || undefined, 10_000, 'GitHub asked');
    await new Promise((r) => setTimeout(r, 1_500));
    expect(names(await pool.query(poolStateQuery))).toEqual([busy]);
    env.w.github.busy.delete(busy!);

    // At maxRunners 1, a new runner can only come once the terminated one stops counting.
    const [replacement] = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return !names(v).includes(busy!) && idleRunners(v).length === 1 ? idleRunners(v) : undefined;
    }, 20_000, 'a new idle runner in the freed place');
    expect(replacement).not.toBe(busy);
    agents.stop();
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });

  it('replaces a runner terminated before it ever reported, and a deleted pool still closes', async () => {
    // No agent: the runner's machine is up but it never registers, so it never reports to its pool.
    const settings = poolSettings({ minIdleRunners: 1, maxRunners: 1, bootstrapTimeout: 600_000 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...auditTimings, leaveReaskIntervalMs: 500 } });
    const [silent] = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return v.runners.length === 1 ? names(v) : undefined;
    }, 20_000, 'one runner');
    await eventually(async () => ((await env.client.workflow.getHandle(runnerWorkflowId(silent!)).query(stateQuery)).status === 'running' ? true : undefined), 20_000, 'its machine up');
    await env.client.workflow.getHandle(runnerWorkflowId(silent!)).terminate('operator removed it by hand');

    const [replacement] = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return v.runners.length === 1 && !names(v).includes(silent!) ? names(v) : undefined;
    }, 20_000, 'a new runner in its place');
    await eventually(async () => ((await env.client.workflow.getHandle(runnerWorkflowId(replacement!)).query(stateQuery)).status === 'running' ? true : undefined), 20_000, 'the new machine up');
    await env.client.workflow.getHandle(runnerWorkflowId(replacement!)).terminate('operator removed this one too');
    // Asked to leave, it is not found: dropped at once, and the pool closes.
    await pool.signal(deletePoolSignal, {});
    const final = await pool.result();
    expect(final.runners).toEqual([]);
  });
});
