/**
 * On the real server: what the worker sends a pool that refuses signals for a while lands a
 * moment after the pool takes signals again. A busy pool's continue-as-new often races a signal;
 * the server then refuses every signal to it ("closing", BUSY_WORKFLOW) until the worker has
 * replayed its history. The worker's native connection backs off from that answer as from a rate
 * limit (a second, then longer), so a runner's report or a relayed job came about a second after
 * the pool was back; the worker's calls to workflows now ask again every 100 ms.
 *
 * The stand-in pool's workflow tasks are answered by hand, so the test decides how long it refuses.
 */
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { jobRelayDetour } from '../../api/job-relay';
import { eventMs } from '../../bench/job-path';
import { RUNNER_INSTANCE_WORKFLOW, runnerStatusSignal } from '../../workflows/messages';
import { instanceStartOptions } from '../../workflows/instance-options';
import { poolWorkflowId, type QueuedJob } from '../../workflows/pool-messages';
import { startClosing, useClosingConnections } from '../api/closing';
import { eventually, instanceInput, startTestWorker, uniqueName } from '../support/temporal';

const conns = useClosingConnections();

/** Long enough that a backoff starting at a second would still be waiting when the pool reopens. */
const REFUSING_MS = 3_000;
/** The 100 ms retry, plus a busy machine's round trips. */
const LANDS_WITHIN_MS = 1_000;

/** When the first signal of that name reached the workflow, on the server's clock. */
async function firstSignalAt(client: Client, workflowId: string, name: string): Promise<number> {
  return eventually(async () => {
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const signal = events.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name);
    return signal ? eventMs(signal) : undefined;
  }, 20_000, `a ${name} signal at ${workflowId}`);
}

/** A stand-in pool that refuses signals until `reopen`. */
async function refusingPool(poolName: string) {
  const poolId = poolWorkflowId(poolName);
  const closing = await startClosing(conns.raw, 'runnerPool', uniqueName('closing-pool'), poolId);
  return { poolId, closing, client: new Client({ connection: conns.raw, namespace: 'default' }) };
}

describe('a pool that refuses signals while it replays', () => {
  it("gets a runner's report a moment after it takes signals again", async () => {
    const worker = await startTestWorker();
    const poolName = uniqueName('refusing');
    const { poolId, closing, client } = await refusingPool(poolName);
    try {
      const name = uniqueName('reporter');
      const runner = await new Client({ connection: worker.connection }).workflow.start(RUNNER_INSTANCE_WORKFLOW, {
        taskQueue: worker.taskQueue,
        ...instanceStartOptions(instanceInput(name, { pool: poolName, notifyPool: true })),
      });
      // Its agent comes online: the runner tells its pool it is idle, and is refused.
      await runner.signal(runnerStatusSignal, { status: 'idle' });
      await new Promise((r) => setTimeout(r, REFUSING_MS));
      const reopenedAt = Date.now();
      await closing.reopen();
      const landedAt = await firstSignalAt(client, poolId, 'runnersChanged');
      expect(landedAt - reopenedAt).toBeLessThan(LANDS_WITHIN_MS);
      await runner.terminate('test done');
    } finally {
      await client.workflow.getHandle(poolId).terminate('test done').catch(() => undefined);
      await worker.stop();
    }
  });

  it('gets relayed jobs a moment after it takes signals again', async () => {
    const worker = await startTestWorker();
    const { poolId, closing, client } = await refusingPool(uniqueName('refusing'));
    try {
      const job: QueuedJob = { jobId: 71, labels: ['self-hosted', 'refusing'], repository: 'octo-org/relay' };
      // The intake's way around a pool that refused: the relay's worker passes the job on.
      await jobRelayDetour(client, worker.taskQueue, 'pool', { afterMs: 200, idleMs: 500 }).send(poolId, [job], uniqueName('spell'));
      await new Promise((r) => setTimeout(r, REFUSING_MS));
      const reopenedAt = Date.now();
      await closing.reopen();
      const landedAt = await firstSignalAt(client, poolId, 'jobsQueued');
      expect(landedAt - reopenedAt).toBeLessThan(LANDS_WITHIN_MS);
    } finally {
      await client.workflow.getHandle(poolId).terminate('test done').catch(() => undefined);
      await worker.stop();
    }
  });
});
