/**
 * A scale-set pool's listener terminated by hand leaves the scale set without a session and its
 * jobs without runners. The pool's own look starts it again, but while the liveness passes run
 * that look is an hourly backstop; the machine pass, which lists every running listener, asks
 * the pool to look as soon as it has seen the listener gone on two passes running.
 */
import { describe, expect, it } from 'vitest';
import { PoolDirectory } from '../../api/pool-directory';
import { SIMULATED_PROVIDER } from '../../devstack/stack';
import type { LivenessReport } from '../../activities/liveness-activities';
import { livenessCheck } from '../../workflows/liveness-check';
import { deletePoolSignal, poolWorkflowId } from '../../workflows/pool-messages';
import { scaleSetListenerId } from '../../workflows/scale-set-messages';
import { eventually, uniqueName } from '../support/temporal';
import { listenerState, listeningPool, useScaleSetStack } from './support/stack';

const stack = useScaleSetStack(500, { poolAuditInterval: 60 * 60_000, leaveReaskInterval: 500 });

const machinePass = (): Promise<LivenessReport> =>
  stack.client.workflow.execute(livenessCheck, { taskQueue: stack.loaded.config.temporal.taskQueue, workflowId: uniqueName('liveness-ss'), args: [{ provider: SIMULATED_PROVIDER, check: 'machines' }] });

async function listenerListedRunning(pool: string): Promise<boolean> {
  const query = `WorkflowType = 'scaleSetListener' AND ExecutionStatus = 'Running' AND WorkflowId = '${scaleSetListenerId(pool)}'`;
  for await (const info of stack.client.workflow.list({ query })) if (info) return true;
  return false;
}

describe("a scale-set pool's listener that no longer runs", () => {
  it('is started again once the machine pass has seen it gone, long before the pool would look by itself', async () => {
    const { pool } = await listeningPool(stack, { maxRunners: 1, scaleSet: { minRunners: 0 } });
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => ((await directory.fetch()).find((e) => e.name === pool.name)?.memo?.glance?.started ? true : undefined), 20_000, 'the pool glance with its digest');
    const listener = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const ended = (await listener.describe()).runId;
    await listener.terminate('operator terminated it');
    await eventually(async () => ((await listenerListedRunning(pool.name)) ? undefined : true), 20_000, 'visibility to list the listener closed');

    // Two passes see it gone. The stack's own scheduled passes run on the same worker and may be
    // the one that asks; the pool's history says that it was asked, and why, whichever did.
    await machinePass();
    await machinePass();

    const again = await eventually(async () => {
      const d = await listener.describe().catch(() => undefined);
      if (d?.status.name !== 'RUNNING' || d.runId === ended) return undefined;
      const state = await listenerState(stack.client, pool.name);
      return state?.status === 'listening' ? state : undefined;
    }, 30_000, 'the listener started again, listening');
    expect(again.scaleSetId).toBeDefined();
    const history = await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).fetchHistory();
    const reasons = (history.events ?? [])
      .map((e) => e.workflowExecutionSignaledEventAttributes)
      .filter((a) => a?.signalName === 'auditPool')
      .map((a) => (JSON.parse(Buffer.from(a!.input!.payloads![0]!.data!).toString()) as { reason: string }).reason);
    expect(reasons).toContain('liveness pass: its scale set listener is not running');
    await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).signal(deletePoolSignal, {});
  });
});
