/**
 * On the real server: queued jobs a pool does not take in time go through a
 * jobRelay workflow, the webhook is answered while the pool still refuses
 * signals, and the relay passes the jobs on once the pool takes them again.
 * A relay whose pool has ended records its jobs as unmatched, and a relay
 * started while no worker runs does its work once one does.
 */
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { jobRelayDetour } from '../../api/job-relay';
import { PoolDirectory, type PoolEntry } from '../../api/pool-directory';
import { SignalBatcher } from '../../api/signal-batcher';
import { TemporalJobSink } from '../../api/temporal-job-sink';
import { silentLogger } from '../../observability/logger';
import { failFastWhenBusy, isBusyWorkflowError } from '../../api/temporal/connection';
import { jobsQueuedSignal, unmatchedJobsQuery, unmatchedJobsWorkflowId, type QueuedJob } from '../../workflows/pool-messages';
import { JOB_RELAY_WORKFLOW, type JobRelayResult } from '../../workflows/relay-messages';
import { eventually, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { startClosing, useClosingConnections } from './closing';
import { signalsOf } from './history';

const conns = useClosingConnections();

const job = (jobId: number): QueuedJob => ({ jobId, labels: ['self-hosted', 'relay-test'], repository: 'octo-org/relay' });

/**
 * The relays started on this task queue, once the server lists any: listing reads the
 * server's visibility records, which follow a start by a moment, longer on a busy machine.
 */
async function relaysOf(client: Client, taskQueue: string) {
  return eventually(async () => {
    const relays = [];
    for await (const r of client.workflow.list({ query: `WorkflowType = '${JOB_RELAY_WORKFLOW}' AND TaskQueue = '${taskQueue}'` })) relays.push(r);
    return relays.length > 0 ? relays : undefined;
  }, 10_000, 'a relay listed');
}

/**
 * A stand-in for a busy pool whose continue-as-new was refused: its tasks are answered
 * by hand, so it refuses signals ("closing") for exactly as long as the test says.
 */
async function closingPool() {
  const poolId = uniqueName('pool/closing');
  const client = new Client({ connection: conns.raw, namespace: 'default' });
  const closing = await startClosing(conns.raw, 'runnerPool', uniqueName('closing-pool'), poolId);
  // The intake's client: runnerflow's retries.
  const intake = new Client({ connection: conns.retrying, namespace: 'default' });
  return { poolId, client, closing, intake };
}

describe('jobRelay', () => {
  it('answers while the pool refuses signals, and passes the job on once the pool takes signals again', async () => {
    const worker = await startTestWorker();
    try {
      const { poolId, client, closing, intake } = await closingPool();
      const batcher = new SignalBatcher<QueuedJob>(
        (workflowId, jobs) => intake.workflow.getHandle(workflowId).signal(jobsQueuedSignal, { jobs }),
        { detour: jobRelayDetour(intake, worker.taskQueue, 'pool', { afterMs: 200, idleMs: 500 }) },
      );
      const started = Date.now();
      await batcher.add(poolId, job(41));
      // Answered through the relay while the pool still refuses every signal (without it, this waits for the pool).
      expect(Date.now() - started).toBeLessThan(2_000);
      const relays = await relaysOf(intake, worker.taskQueue);
      expect(relays).toHaveLength(1);
      expect(relays[0]!.workflowId.startsWith(`jobs/relay/${poolId}/`)).toBe(true);

      await new Promise((r) => setTimeout(r, 500));
      expect((await signalsOf(client, poolId)).filter((s) => s.name === 'jobsQueued')).toEqual([]);
      // The pool's task completes without closing: it takes signals again, and the job arrives.
      await closing.reopen();
      const relay = intake.workflow.getHandle<() => Promise<JobRelayResult>>(relays[0]!.workflowId);
      expect(await relay.result()).toEqual({ forwarded: 1 });
      const queued = (await signalsOf(client, poolId)).filter((s) => s.name === 'jobsQueued').map((s) => (s.input as { jobs: QueuedJob[] }).jobs.map((j) => j.jobId));
      // The relay's copy, and the intake's own slow signal landing late: the pool keeps one per job id.
      expect(queued.length).toBeGreaterThanOrEqual(1);
      expect(queued.every((ids) => ids.length === 1 && ids[0] === 41)).toBe(true);
      await client.workflow.getHandle(poolId).terminate('test done');
    } finally {
      await worker.stop();
    }
  });

  it('goes around a pool that refuses signals at the first refusal, not after the relay delay', async () => {
    const worker = await startTestWorker();
    try {
      const { poolId, client, closing, intake } = await closingPool();
      const toPool = (workflowId: string, jobs: QueuedJob[]) => intake.workflow.getHandle(workflowId).signal(jobsQueuedSignal, { jobs });
      const batcher = new SignalBatcher<QueuedJob>((workflowId, jobs) => failFastWhenBusy(() => toPool(workflowId, jobs)), {
        // Far longer than the test waits: only the refusal itself can send the job around in time.
        detour: { ...jobRelayDetour(intake, worker.taskQueue, 'pool', { afterMs: 10_000, idleMs: 500 }), refused: isBusyWorkflowError, waitForTarget: toPool },
      });
      const started = Date.now();
      await batcher.add(poolId, job(61));
      expect(Date.now() - started).toBeLessThan(2_000);
      const relays = await relaysOf(intake, worker.taskQueue);
      expect(relays.map((r) => r.workflowId.startsWith(`jobs/relay/${poolId}/`))).toEqual([true]);

      await closing.reopen();
      const relay = intake.workflow.getHandle<() => Promise<JobRelayResult>>(relays[0]!.workflowId);
      expect(await relay.result()).toEqual({ forwarded: 1 });
      // Refused, the intake's own signal never landed: the relay's is the only copy.
      const queued = (await signalsOf(client, poolId)).filter((s) => s.name === 'jobsQueued').map((s) => (s.input as { jobs: QueuedJob[] }).jobs.map((j) => j.jobId));
      expect(queued).toEqual([[61]]);
      await client.workflow.getHandle(poolId).terminate('test done');
    } finally {
      await worker.stop();
    }
  });

  it('the webhook sink goes around its pool at the refusal, with the relay delay far away', async () => {
    const worker = await startTestWorker();
    try {
      const { poolId, client, closing, intake } = await closingPool();
      const label = uniqueName('refused');
      // Routing reads pools from visibility; the stand-in pool has no memo, so the directory is given it.
      const entry: PoolEntry = { name: poolId, workflowId: poolId, runId: '', startTime: new Date().toISOString(), memo: { labels: [label], priority: 1, enabled: true, maxRunners: 1, provider: 'fake' } };
      const pools = new (class extends PoolDirectory {
        override list(): Promise<PoolEntry[]> {
          return Promise.resolve([entry]);
        }
      })(intake, 0);
      const sink = new TemporalJobSink({ client: intake, taskQueue: worker.taskQueue, pools, logger: silentLogger, queryTimeoutMs: 500, relay: { afterMs: 10_000, idleMs: 500 } });
      const started = Date.now();
      await sink.jobQueued({ jobId: 71, labels: ['self-hosted', label], deliveryId: 'd-71' });
      expect(Date.now() - started).toBeLessThan(2_000);

      const relays = await relaysOf(intake, worker.taskQueue);
      expect(relays.map((r) => r.workflowId.startsWith(`jobs/relay/${poolId}/`))).toEqual([true]);
      await closing.reopen();
      expect(await intake.workflow.getHandle<() => Promise<JobRelayResult>>(relays[0]!.workflowId).result()).toEqual({ forwarded: 1 });
      const queued = (await signalsOf(client, poolId)).filter((s) => s.name === 'jobsQueued').map((s) => (s.input as { jobs: QueuedJob[] }).jobs.map((j) => j.jobId));
      expect(queued).toEqual([[71]]);
      await client.workflow.getHandle(poolId).terminate('test done');
    } finally {
      await worker.stop();
    }
  });

  it('records the jobs of a pool that has ended as unmatched, and does its work once a worker runs', async () => {
    const taskQueue = uniqueName('relay-later');
    const client = new Client({ connection: conns.retrying, namespace: 'default' });
    const detour = jobRelayDetour<QueuedJob>(client, taskQueue, 'pool', { afterMs: 200, idleMs: 300 });
    const spell = uniqueName('spell');
    // Taken durably while no worker polls the task queue.
    await detour.send('pool/no-such-pool', [job(51), job(52)], spell);
    let worker: TestWorker | undefined;
    try {
      worker = await startTestWorker({ taskQueue });
      const relay = client.workflow.getHandle<() => Promise<JobRelayResult>>(`jobs/relay/pool/no-such-pool/${spell}`);
      expect(await relay.result()).toEqual({ forwarded: 2 });
      const record = client.workflow.getHandle(unmatchedJobsWorkflowId(taskQueue));
      const recorded = await eventually(async () => {
        const jobs = await record.query(unmatchedJobsQuery);
        return jobs.length === 2 ? jobs : undefined;
      }, 20_000, 'the relayed jobs in the unmatched record');
      expect(recorded.map((j) => [j.jobId, j.reason])).toEqual([
        [51, 'the matching pool ended while the job was relayed'],
        [52, 'the matching pool ended while the job was relayed'],
      ]);
      await record.terminate('test done');
    } finally {
      await worker?.stop();
    }
  });

  it('tells its caller when a relay cannot be started, and fails the batch so it waits for the pool', async () => {
    const nowhere = new Client({ connection: conns.retrying, namespace: uniqueName('no-such-namespace') });
    const failed: { target: string; jobs: number }[] = [];
    const detour = jobRelayDetour<QueuedJob>(nowhere, 'any-queue', 'pool', { afterMs: 200, idleMs: 300 }, { failed: (target, jobs) => failed.push({ target, jobs }) });
    await expect(detour.send('pool/somewhere', [job(61)], uniqueName('spell'))).rejects.toThrow();
    expect(failed).toEqual([{ target: 'pool/somewhere', jobs: 1 }]);
  });
});
