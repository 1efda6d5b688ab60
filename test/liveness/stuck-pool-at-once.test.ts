/**
 * A pool stuck on a nondeterminism error that only its own code could have caused (the build
 * that wrote the commands is the only one polling) is reset at the first pass that sees it, and
 * the API, which hears of it first, asks for that pass at once. A pool whose history other code
 * wrote (a deploy under way) is left until its failures have lasted `stuckPoolAfter`.
 */
import { describe, expect, it } from 'vitest';
import { LIVENESS_CHECK_WORKFLOW } from '../../workflows/liveness-check';
import { poolStateQuery } from '../../workflows/pool-messages';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import { ensureSchedule } from '../../worker/schedules';
import { expectError, testApp } from '../api/support';
import { eventually, instanceInput, startTestWorker, uniqueName } from '../support/temporal';
import { instanceStartOptions } from '../../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW, runnerStatusSignal } from '../../workflows/messages';
import { nondeterminismFailed, STUCK_JOB, stuckPool, withCounterfeitFirstTask } from './counterfeit';
import { addProvider, runLiveness, useLivenessRig } from './helpers';

// Far longer than any test: a pool reset here was reset without waiting it out.
const rig = useLivenessRig({ stuckPoolAfterMs: 10 * 60_000 });

/** The build id of runnerflow's own workers in this suite (a hash of the workflow bundle). */
async function ownBuildId(): Promise<string> {
  const probe = await startTestWorker({ taskQueue: uniqueName('tq-build'), providers: rig.providers, github: rig.github });
  try {
    const { buildId } = probe.worker.options;
    if (!buildId) throw new Error('the test worker has no build id');
    return buildId;
  } finally {
    await probe.stop();
  }
}

/** The provider's machine schedule, daily: it does not come round by itself during a test. */
async function dailyMachinePass(provider: string): Promise<string> {
  const scheduleId = livenessScheduleId(provider, 'machines');
  await ensureSchedule(rig.client, {
    scheduleId,
    intervalMs: 24 * 3_600_000,
    jitterMs: 0,
    workflowType: LIVENESS_CHECK_WORKFLOW,
    args: [{ provider, check: 'machines' }],
    taskQueue: rig.worker.taskQueue,
  });
  return scheduleId;
}

describe('a pool stuck on a nondeterminism error', () => {
  it('is reset at the first pass when the build that wrote its commands is the only one polling', async () => {
    const { provider, settings, pool, stuckRun, done } = await stuckPool(rig, 'own-build', { buildId: await ownBuildId() });
    try {
      // Passes until visibility lists the pool; the first that looks at it resets it.
      const report = await eventually(async () => {
        const pass = await runLiveness(rig, { provider, check: 'machines' });
        return pass.repaired?.length ? pass : undefined;
      }, 30_000, 'a machine pass that resets the pool');
      expect(report.repaired).toEqual([{ pool: settings.name, resetTo: expect.any(Number), cause: expect.stringContaining('Nondeterminism') }]);
      expect((await pool.describe()).runId).not.toBe(stuckRun);
      const view = await eventually(async () => {
        const state = await pool.query(poolStateQuery);
        return state.queuedJobCount === 1 ? state : undefined;
      }, 20_000, 'the reset pool to answer with the job');
      expect(view.queuedJobs.map((j) => j.jobId)).toEqual([STUCK_JOB]);
    } finally {
      await done();
    }
  });

  it('is left until stuckPoolAfter when other code wrote its history, as a deploy under way would', async () => {
    const { provider, pool, stuckRun, done } = await stuckPool(rig, 'other-build');
    try {
      // Visibility lists the pool under its provider: the passes below look at it.
      await eventually(async () => {
        for await (const info of rig.client.workflow.list({ query: `WorkflowId = '${pool.workflowId}' AND ExecutionStatus = 'Running'` })) return info;
        return undefined;
      }, 20_000, 'visibility to list the pool');
      for (let pass = 0; pass < 2; pass++) {
        const report = await runLiveness(rig, { provider, check: 'machines' });
        expect(report.repaired).toEqual([]);
        expect(report.failed).toEqual([]);
      }
      expect((await pool.describe()).runId).toBe(stuckRun);
    } finally {
      await done();
    }
  });

  it("is reset without waiting for the next pass once the API is asked for it: the provider's pass is called for", async () => {
    let scheduleId = '';
    const { settings, taskQueue, pool, stuckRun, done } = await stuckPool(rig, 'api-ask', { buildId: await ownBuildId(), beforeWorker: async (p) => void (scheduleId = await dailyMachinePass(p)) });
    const api = testApp(rig.client, taskQueue);
    try {
      // The operator looks at the pool: told why it cannot answer, and it is mended behind the answer.
      const failing = await eventually(async () => {
        const answer = await api.call('GET', `/api/v1/pools/${settings.name}`);
        return answer.status === 503 ? answer : undefined;
      }, 30_000, "the API to say the pool's tasks are failing");
      await expectError(failing, 503, 'workflow_task_failing');
      const view = await eventually(async () => {
        const answer = await api.call('GET', `/api/v1/pools/${settings.name}`);
        return answer.status === 200 ? ((await answer.json()) as { queuedJobs: { jobId: number }[] }) : undefined;
      }, 45_000, 'the pool reset and answering again');
      expect(view.queuedJobs.map((j) => j.jobId)).toEqual([STUCK_JOB]);
      expect((await pool.describe()).runId).not.toBe(stuckRun);
      const schedule = await rig.client.schedule.getHandle(scheduleId).describe();
      expect(schedule.info.numActionsTaken).toBeGreaterThanOrEqual(1);
      expect(api.logger.entries.some((e) => e.level === 'warn' && /liveness pass asked for now/.test(e.message))).toBe(true);
    } finally {
      await done();
      await rig.client.schedule.getHandle(scheduleId).delete().catch(() => undefined);
    }
  });
});

describe('a runner workflow stuck on a nondeterminism error', () => {
  it("is ended without waiting for the next pass once the API is asked for it: the provider's pass is called for", async () => {
    const provider = addProvider(rig).name;
    const scheduleId = await dailyMachinePass(provider);
    const taskQueue = uniqueName('tq-runner-ask');
    const name = uniqueName('runner-ask');
    const runner = await withCounterfeitFirstTask(taskQueue, () =>
      rig.client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(instanceInput(name, { provider })) }),
    );
    const worker = await startTestWorker({ taskQueue, providers: rig.providers, github: rig.github });
    const api = testApp(rig.client, taskQueue);
    try {
      await runner.signal(runnerStatusSignal, { status: 'idle' });
      await eventually(() => nondeterminismFailed(runner), 20_000, 'a task failed on nondeterminism');
      // The operator keeps looking at the runner (as `runnerflow runner watch` does); no pass is run here.
      await eventually(async () => {
        const answer = await api.call('GET', `/api/v1/runners/${name}`);
        if (answer.status === 503) await expectError(answer, 503, 'workflow_task_failing');
        return (await runner.describe()).status.name === 'TERMINATED';
      }, 50_000, 'the runner ended by a pass the API called for');
      expect((await rig.client.schedule.getHandle(scheduleId).describe()).info.numActionsTaken).toBeGreaterThanOrEqual(1);
      expect(api.logger.entries.some((e) => e.level === 'warn' && e.meta?.runner === `runner/${name}`)).toBe(true);
    } finally {
      await runner.terminate('test done').catch(() => undefined);
      await rig.client.schedule.getHandle(scheduleId).delete().catch(() => undefined);
      await worker.stop();
    }
  });
});
