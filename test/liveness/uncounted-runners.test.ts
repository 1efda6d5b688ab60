/**
 * A runner that runs again after its pool wrote it off holds a machine the pool
 * neither counts against maxRunners nor ever asks to leave. The way an operator
 * makes one: `temporal workflow reset` of a static runner that already left.
 * The machine pass asks such runners to leave, and only them.
 */
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { deleteSignal, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import type { runnerInstance } from '../../workflows/runner-instance';
import { deletePoolSignal, poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { autoRegister, idleRunners, poolSettings, startPool } from '../pool/helpers';
import { eventually, uniqueName } from '../support/temporal';
import { addProvider, idleInstance, LIVENESS_TIMINGS, runLiveness, useLivenessRig, waitUntilListedRunning } from './helpers';

const rig = useLivenessRig();

/**
 * What `temporal workflow reset --type FirstWorkflowTask --reapply-type None` does: the runner
 * begins its life again, without the signal that ended the last one.
 */
async function resetToFirstTask(workflowId: string): Promise<void> {
  const handle = rig.client.workflow.getHandle(workflowId);
  const history = await handle.fetchHistory();
  const firstTask = history.events?.find((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  if (!firstTask?.eventId) throw new Error(`no completed workflow task in ${workflowId}`);
  await rig.client.workflowService.resetWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId },
    workflowTaskFinishEventId: firstTask.eventId,
    reason: 'operator reset',
    resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
    requestId: randomUUID(),
  });
}

describe('runners their pool does not count', () => {
  it('a static runner reset after it left is asked to leave; the pool’s own runners stay', async () => {
    const provider = addProvider(rig);
    const settings = poolSettings({ provider: provider.name, ephemeral: false, minIdleRunners: 1, maxRunners: 2 });
    const pool = await startPool(rig.client, rig.worker.taskQueue, { settings, timings: LIVENESS_TIMINGS });
    const agents = autoRegister(rig.client, pool);
    const [first] = await eventually(async () => {
      const idle = idleRunners(await pool.query(poolStateQuery));
      return idle.length === 1 ? idle : undefined;
    }, 20_000, 'one idle runner');
    const firstHandle = rig.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(first!));
    await firstHandle.signal(deleteSignal, { reason: 'operator removed it' });
    await firstHandle.result();
    const [replacement] = await eventually(async () => {
      const idle = idleRunners(await pool.query(poolStateQuery)).filter((n) => n !== first);
      return idle.length === 1 ? idle : undefined;
    }, 20_000, 'the pool to replace it');

    await resetToFirstTask(runnerWorkflowId(first!));
    await eventually(async () => ((await firstHandle.query(stateQuery)).status === 'running' ? true : undefined), 20_000, 'the reset runner to run again');
    expect(provider.fake.instance(first!)).toBeDefined();
    await waitUntilListedRunning(rig, [first!, replacement!]);
    // Its reports reach a pool that has written the name off: the pool does not count it.
    expect((await pool.query(poolStateQuery)).runners.map((r) => r.name)).toEqual([replacement]);

    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    // The pool's glance names only its own runner, so the pool is asked.
    expect(report).toMatchObject({ instances: 2, signalled: [], orphaned: [], uncounted: [{ name: first, pool: settings.name }], failed: [], poolsAsked: 1 });
    const final = await firstHandle.result();
    expect(final.transitions.filter((t) => t.to === 'pending_delete').at(-1)?.reason).toBe(`pool ${settings.name} does not count this runner`);
    expect(final.status).toBe('deleted');
    expect(provider.fake.instance(first!)).toBeUndefined();
    expect((await rig.client.workflow.getHandle(runnerWorkflowId(replacement!)).query(stateQuery)).status).toBe('running');

    agents.stop();
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });

  it('a pool that does not answer says nothing either way: its runners stay, and the pass says which pool', async () => {
    const provider = addProvider(rig);
    const silentPool = uniqueName('silent-pool');
    // An open pool workflow no worker serves: it can be described, but not asked what it counts.
    const pool = await rig.client.workflow.start('runnerPool', { taskQueue: uniqueName('tq-nobody'), workflowId: poolWorkflowId(silentPool), args: [] });
    const kept = await idleInstance(rig, provider.name, { input: { pool: silentPool, notifyPool: true } });

    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    expect(report).toMatchObject({ instances: 1, signalled: [], orphaned: [], uncounted: [] });
    expect(report.failed.map((f) => f.target)).toEqual([poolWorkflowId(silentPool)]);
    expect((await kept.handle.query(stateQuery)).status).toBe('running');
    await kept.handle.signal('forceDelete', { reason: 'test done' });
    await pool.terminate('test done');
  });
});
