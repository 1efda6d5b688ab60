/**
 * A runner's report that it came online can be given up (the server out of reach for longer
 * than the report is tried), and the runner, whose task is done, does not send it again. The
 * pool's look at its runners finds such a runner: its machine runs while the pool still counts
 * it as starting.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPoolActivities, type ReportToPoolArgs } from '../../activities/pool-activities';
import { registry } from '../../observability/metrics';
import { runnerStatusSignal, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import type { runnerPool } from '../../workflows/runner-pool';
import { connectClient, eventually, FAST_TIMINGS, startTestWorker, type TestWorker } from '../support/temporal';
import { autoRegister, idleRunners, poolSettings, startPool } from './helpers';

let env: Awaited<ReturnType<typeof connectClient>>;
let worker: TestWorker | undefined;
/** Names of runners whose idle report this worker gave up, as after a long outage of the server. */
const lost = new Set<string>();
/** Every report the worker was asked to send, in order. */
const sent: ReportToPoolArgs['report'][] = [];
let dropIdleReports = true;

beforeAll(async () => {
  env = await connectClient();
  const reports = createPoolActivities({ client: env.client });
  worker = await startTestWorker({
    extraActivities: {
      async reportToPool(args: ReportToPoolArgs): Promise<void> {
        sent.push(args.report);
        if (dropIdleReports && args.report.runnerStatus === 'idle' && !lost.has(args.report.name)) {
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

/** Signals of one name a runner's history holds. */
async function signalsTo(runner: string, name: string): Promise<number> {
  const history = await env.client.workflow.getHandle(runnerWorkflowId(runner)).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name).length;
}

it('a pool that missed a runner\'s idle report asks it again at its next look, and counts it idle', async () => {
  dropIdleReports = true;
  const settings = poolSettings({ minIdleRunners: 2, maxRunners: 2 });
  const pool = await startPool(env.client, worker!.taskQueue, { settings, timings: { ...FAST_TIMINGS, poolAuditIntervalMs: 1_500 } });
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
    expect(await signalsTo(runner, 'reportPhase')).toBeGreaterThanOrEqual(1);
    const idleReports = sent.filter((r) => r.name === runner && r.runnerStatus === 'idle');
    expect(idleReports.length).toBeGreaterThanOrEqual(2);
    expect(idleReports[1]!.seq).toBeGreaterThan(idleReports[0]!.seq);
  }
  // The operator sees it: the worker counts each runner asked, by pool.
  const counted = (await registry.getMetricsAsJSON()).find((m) => m.name === 'runnerflow_pool_unheard_runners_asked_total');
  expect(counted?.values.find((v) => v.labels.pool === settings.name)?.value).toBeGreaterThanOrEqual(2);
  await closePool(pool);
});

it('asks no runner the pool heard come online, and hears nothing new from one whose agent is still booting', async () => {
  dropIdleReports = false;
  const pool = await startPool(env.client, worker!.taskQueue, { settings: poolSettings({ minIdleRunners: 2, maxRunners: 2 }), timings: { ...FAST_TIMINGS, poolAuditIntervalMs: 500 } });
  const [online, booting] = await eventually(async () => {
    const names = (await pool.query(poolStateQuery)).runners.map((r) => r.name);
    if (names.length !== 2) return undefined;
    const states = await Promise.all(names.map((n) => env.client.workflow.getHandle(runnerWorkflowId(n)).query(stateQuery)));
    return states.every((st) => st.status === 'running') ? names : undefined;
  }, 30_000, 'two machines running');
  // One agent comes online; the other's never does.
  await env.client.workflow.getHandle(runnerWorkflowId(online!)).signal(runnerStatusSignal, { status: 'idle' });
  await eventually(async () => (idleRunners(await pool.query(poolStateQuery)).includes(online!) ? true : undefined), 30_000, 'the pool counting one idle');
  // Until its idle report arrived, a look may have found it starting with its machine running.
  const askedBefore = await signalsTo(online!, 'reportPhase');
  const bootingAskedBefore = await signalsTo(booting!, 'reportPhase');
  await eventually(async () => ((await signalsTo(booting!, 'reportPhase')) >= bootingAskedBefore + 2 ? true : undefined), 30_000, 'two more looks');

  expect(await signalsTo(online!, 'reportPhase')).toBe(askedBefore);
  expect(sent.filter((r) => r.name === booting)).toEqual([]);
  expect((await pool.query(poolStateQuery)).runners.find((r) => r.name === booting)?.runnerStatus).toBe('pending');
  await closePool(pool);
});
