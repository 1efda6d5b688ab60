/**
 * A runner's "idle" goes to its pool without its workflow task waiting for it, so a report the
 * worker loses (it dies first, or the server stays out of reach past the report's tries) is never
 * retried by the runner. The pool's look at its runners finds such a runner: its machine runs
 * while the pool still counts it as starting.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPoolActivities, type ReportToPoolArgs } from '../../activities/pool-activities';
import { runnerWorkflowId } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import type { runnerPool } from '../../workflows/runner-pool';
import { connectClient, eventually, FAST_TIMINGS, startTestWorker, type TestWorker } from '../support/temporal';
import { autoRegister, idleRunners, poolSettings, startPool } from './helpers';

let env: Awaited<ReturnType<typeof connectClient>>;
let worker: TestWorker | undefined;
/** Names of runners whose idle report this worker lost, as a worker that died would. */
const lost = new Set<string>();
/** Every report the worker was asked to send, in order. */
const sent: ReportToPoolArgs['report'][] = [];
let loseIdleReports = false;

beforeAll(async () => {
  env = await connectClient();
  const reports = createPoolActivities({ client: env.client });
  worker = await startTestWorker({
    extraActivities: {
      async reportToPool(args: ReportToPoolArgs): Promise<void> {
        sent.push(args.report);
        if (loseIdleReports && args.report.runnerStatus === 'idle' && !lost.has(args.report.name)) {
          lost.add(args.report.name);
          return;
        }
        await reports.reportToPool(args);
      },
    },
  });
});
afterAll(async () => {
  await worker?.stop();
  await env?.connection.close();
});

async function closePool(pool: WorkflowHandle<typeof runnerPool>): Promise<void> {
  await pool.signal(deletePoolSignal, {});
  await pool.result();
}

/** Local activities a runner's history records (each as a marker naming its activity). */
async function localActivities(runner: string): Promise<string[]> {
  const history = await env.client.workflow.getHandle(runnerWorkflowId(runner)).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = marker.details?.['data']?.payloads?.[0]?.data;
    const text = data ? Buffer.from(data).toString() : '';
    return ['reportToPool', 'createInstanceInline', 'deleteInstanceInline'].filter((type) => text.includes(type));
  });
}

it('a runner that comes online tells its pool without a local activity', async () => {
  loseIdleReports = false;
  const pool = await startPool(env.client, worker!.taskQueue, { settings: poolSettings({ minIdleRunners: 1, maxRunners: 1 }), timings: { ...FAST_TIMINGS, poolAuditIntervalMs: 10 * 60_000 } });
  const agents = autoRegister(env.client, pool);
  const [runner] = await eventually(async () => {
    const idle = idleRunners(await pool.query(poolStateQuery));
    return idle.length === 1 ? idle : undefined;
  }, 30_000, 'one idle runner');
  agents.stop();
  expect(sent.filter((r) => r.name === runner).map((r) => r.runnerStatus)).toEqual(['idle']);
  const recorded = await localActivities(runner!);
  expect(recorded).toContain('createInstanceInline');
  expect(recorded).not.toContain('reportToPool');
  await closePool(pool);
});

it('a pool that missed a runner\'s idle report asks it again at its next look, and counts it idle', async () => {
  loseIdleReports = true;
  const pool = await startPool(env.client, worker!.taskQueue, { settings: poolSettings({ minIdleRunners: 2, maxRunners: 2 }), timings: { ...FAST_TIMINGS, poolAuditIntervalMs: 1_500 } });
  const agents = autoRegister(env.client, pool);
  const runners = await eventually(async () => {
    const names = (await pool.query(poolStateQuery)).runners.map((r) => r.name);
    return names.length === 2 && names.every((n) => lost.has(n)) ? names : undefined;
  }, 30_000, 'both runners online, their idle reports lost');

  const view = await eventually(async () => {
    const v = await pool.query(poolStateQuery);
    return idleRunners(v).length === 2 ? v : undefined;
  }, 30_000, 'the pool counting both idle');
  agents.stop();
  expect(view.runners.map((r) => r.name).sort()).toEqual([...runners].sort());
  for (const runner of runners) {
    // Asked once, each said "idle" a second time, under a number of its own.
    const history = await env.client.workflow.getHandle(runnerWorkflowId(runner)).fetchHistory();
    const asks = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'reportPhase');
    expect(asks.length).toBeGreaterThanOrEqual(1);
    const idleReports = sent.filter((r) => r.name === runner && r.runnerStatus === 'idle');
    expect(idleReports.length).toBeGreaterThanOrEqual(2);
    expect(idleReports[1]!.seq).toBeGreaterThan(idleReports[0]!.seq);
  }
  await closePool(pool);
});
