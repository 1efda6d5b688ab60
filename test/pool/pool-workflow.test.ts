import { describe, expect, it } from 'vitest';
import { controllerLabel } from '../../github/port';
import { forceDeleteSignal, jobCompletedSignal, jobStartedSignal, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { deletePoolSignal, jobProgressSignal, jobQueuedSignal, poolStateQuery, recentRepositoriesQuery, updatePoolSignal } from '../../workflows/pool-messages';
import { eventually, FAST_TIMINGS, useTestWorker } from '../support/temporal';
import { autoRegister, idleRunners, isGlanceTimer, poolSettings, startPool } from './helpers';

const env = useTestWorker();

describe('runnerPool', () => {
  it('keeps min idle runners, replacing one that is removed', async () => {
    const settings = poolSettings({ minIdleRunners: 2 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings });
    const agents = autoRegister(env.client, pool);
    try {
      const first = await eventually(async () => {
        const v = await pool.query(poolStateQuery);
        const idle = idleRunners(v);
        return idle.length === 2 ? idle : undefined;
      }, 20_000, 'two idle runners');
      await env.client.workflow.getHandle(runnerWorkflowId(first[0]!)).signal(forceDeleteSignal, { reason: 'operator' });
      const second = await eventually(async () => {
        const v = await pool.query(poolStateQuery);
        const idle = idleRunners(v);
        return idle.length === 2 && !idle.includes(first[0]!) ? idle : undefined;
      }, 20_000, 'a replacement runner');
      expect(second).toContain(first[1]);
      expect(env.w.fake.instances().filter((m) => m.poolId === settings.name)).toHaveLength(2);
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    const final = await pool.result();
    expect(final.runners).toEqual([]);
    expect(env.w.fake.instances().filter((m) => m.poolId === settings.name)).toHaveLength(0);
  });

  it('scales idle runners down after the idle timeout and never touches a busy one', async () => {
    const settings = poolSettings({ minIdleRunners: 0, idleTimeout: 1_500 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings });
    const agents = autoRegister(env.client, pool);
    try {
      for (const jobId of [1, 2, 3]) await pool.signal(jobQueuedSignal, { jobId, labels: ['linux'] });
      const idle = await eventually(async () => {
        const names = idleRunners(await pool.query(poolStateQuery));
        return names.length === 3 ? names : undefined;
      }, 20_000, 'three idle runners');
      const busy = idle[0]!;
      env.w.github.busy.add(busy);
      await env.client.workflow.getHandle(runnerWorkflowId(busy)).signal(jobStartedSignal, { jobId: 1 });
      await pool.signal(jobProgressSignal, { jobId: 1, action: 'in_progress', runnerName: busy });
      // Jobs 2 and 3 were cancelled before any runner took them.
      await pool.signal(jobProgressSignal, { jobId: 2, action: 'completed' });
      await pool.signal(jobProgressSignal, { jobId: 3, action: 'completed' });

      const view = await eventually(async () => {
        const v = await pool.query(poolStateQuery);
        return v.runners.length === 1 ? v : undefined;
      }, 20_000, 'idle runners scaled down');
      expect(view.runners[0]).toMatchObject({ name: busy, runnerStatus: 'active' });
      expect(view.runners[0]?.deleteRequested).toBeFalsy();
      expect(env.w.github.calls.filter((c) => c.op === 'remove' && c.name === busy)).toHaveLength(0);
      expect((await env.client.workflow.getHandle(runnerWorkflowId(busy)).query(stateQuery)).status).toBe('running');
    } finally {
      agents.stop();
      env.w.github.busy.clear();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });

  it('replaces idle runners after a settings update', async () => {
    const settings = poolSettings({ minIdleRunners: 1, image: 'ubuntu-22.04' });
    const pool = await startPool(env.client, env.w.taskQueue, { settings });
    const agents = autoRegister(env.client, pool);
    try {
      const [old] = await eventually(async () => {
        const idle = idleRunners(await pool.query(poolStateQuery));
        return idle.length === 1 ? idle : undefined;
      }, 20_000, 'one idle runner');
      expect(env.w.fake.instance(old!)?.image).toBe('ubuntu-22.04');
      await pool.signal(updatePoolSignal, { settings: { ...settings, image: 'ubuntu-24.04' } });
      const [fresh] = await eventually(async () => {
        const v = await pool.query(poolStateQuery);
        const idle = idleRunners(v);
        return v.runners.length === 1 && idle.length === 1 && idle[0] !== old ? idle : undefined;
      }, 20_000, 'replacement from new settings');
      expect(env.w.fake.instance(fresh!)?.image).toBe('ubuntu-24.04');
      expect(env.w.fake.instance(old!)).toBeUndefined();
      const view = await pool.query(poolStateQuery);
      expect(view.settingsVersion).toBe(2);
      expect(view.runners[0]?.settingsVersion).toBe(2);
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });

  it('continues as new with its state, and still ignores jobs it already handled', async () => {
    const settings = poolSettings({ minIdleRunners: 1 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, historyLimit: 40 });
    const agents = autoRegister(env.client, pool);
    try {
      const firstRunId = (await pool.describe()).runId;
      await pool.signal(jobQueuedSignal, { jobId: 100, labels: ['linux'], repository: 'acme/carried' });
      await pool.signal(jobProgressSignal, { jobId: 100, action: 'in_progress' });
      // Job events grow the history until it passes the limit; how many that takes depends on how the server batches them.
      let jobId = 1000;
      await eventually(async () => {
        await pool.signal(jobProgressSignal, { jobId: jobId++, action: 'completed' });
        return (await pool.describe()).runId !== firstRunId;
      }, 20_000, 'continue-as-new');
      // One runner for min idle, maybe a second for job 100 if the pool saw it queued before it started.
      const view = await eventually(async () => {
        const v = await pool.query(poolStateQuery);
        return v.runners.length > 0 && idleRunners(v).length === v.runners.length ? v : undefined;
      }, 20_000, 'runners kept across continue-as-new');
      // Redelivered queued event for a job that already started: not demand again.
      await pool.signal(jobQueuedSignal, { jobId: 100, labels: ['linux'] });
      await new Promise((r) => setTimeout(r, 500));
      const after = await pool.query(poolStateQuery);
      expect(after.queuedJobs).toEqual([]);
      expect(after.runners.map((r) => r.name).sort()).toEqual(view.runners.map((r) => r.name).sort());
      expect(env.w.fake.instances().filter((m) => m.poolId === settings.name)).toHaveLength(view.runners.length);
      // Where its jobs came from, for the sweep's look for lost ones.
      expect((await pool.query(recentRepositoriesQuery)).map(([repository]) => repository)).toEqual(['acme/carried']);
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });

  it('continues as new before starting anything when a job wakes it with its history already full; the next run starts the runner', async () => {
    // How long a pool's history is once its first task is done, from a pool that never fills its history.
    const probe = poolSettings({ minIdleRunners: 0 });
    const probePool = await startPool(env.client, env.w.taskQueue, { settings: probe, historyLimit: 10_000 });
    await probePool.query(poolStateQuery);
    const atRest = (await probePool.fetchHistory()).events!.length;
    await probePool.signal(deletePoolSignal, {});
    await probePool.result();

    // The same pool with that limit: at rest it is full to the event, and the job's own signal
    // and workflow task take its history past the limit.
    const settings = poolSettings({ minIdleRunners: 0 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, historyLimit: atRest });
    const agents = autoRegister(env.client, pool);
    try {
      await pool.query(poolStateQuery);
      const firstRunId = (await pool.describe()).runId;
      await pool.signal(jobQueuedSignal, { jobId: 7, labels: ['linux'] });
      const view = await eventually(async () => {
        const v = await pool.query(poolStateQuery);
        return idleRunners(v).length === 1 ? v : undefined;
      }, 20_000, "the job's runner online");
      expect((await pool.describe()).runId).not.toBe(firstRunId);

      const started = (events: { activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null }[]) =>
        events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startRunners').length;
      const firstRun = (await env.client.workflow.getHandle(pool.workflowId, firstRunId).fetchHistory()).events!;
      expect(firstRun.at(-1)!.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
      // Starting there would have kept the run open to signals until the start returned.
      expect(started(firstRun)).toBe(0);
      const laterRuns: number[] = [];
      for await (const run of env.client.workflow.list({ query: `WorkflowId = "${pool.workflowId}"` })) {
        if (run.runId !== firstRunId) laterRuns.push(started((await env.client.workflow.getHandle(pool.workflowId, run.runId).fetchHistory()).events!));
      }
      expect(laterRuns.reduce((a, b) => a + b, 0)).toBe(1);
      expect(view.runners).toHaveLength(1);
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });

  it('ignores queued jobs that make no sense instead of keeping them', async () => {
    const settings = poolSettings({ minIdleRunners: 0, maxRunners: 0 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings });
    // What a script or a person typing into the Web UI might send.
    await pool.signal('jobsQueued', { jobs: [{ jobId: 'forty-two' }, { jobId: 5, labels: 'linux' }, null, { jobId: 6, labels: ['linux'], queuedAt: 'yesterday' }, { jobId: 7, labels: ['linux'] }] });
    await pool.signal('jobsQueued', 'not an object');
    await pool.signal('jobQueued', { jobId: -1, labels: [] });
    await pool.signal('jobQueued', { jobId: 8 });
    const view = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return v.queuedJobCount === 2 ? v : undefined;
    }, 10_000, 'the two jobs that make sense');
    // Sorted: signals that arrive with the pool's first task reach their handlers by name, so
    // the two kinds may be taken in either order.
    expect(view.queuedJobs.map((j) => [j.jobId, j.labels]).sort(([a], [b]) => Number(a) - Number(b))).toEqual([
      [7, ['linux']],
      [8, []],
    ]);
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });

  it('waits for its next deadline on one timer, not on a new one in every decision', async () => {
    const settings = poolSettings({ minIdleRunners: 0, maxRunners: 0 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, queuedJobTtlMs: 3_000 } });
    // Jobs queued at one moment expire together: one deadline, however many decisions come before it.
    const queuedAt = new Date().toISOString();
    for (let i = 0; i < 6; i++) {
      await pool.signal(jobQueuedSignal, { jobId: 500 + i, labels: ['linux'], queuedAt });
      // Each job in a decision of its own.
      await eventually(async () => ((await pool.query(poolStateQuery)).queuedJobs.length === i + 1 ? true : undefined), 10_000, `job ${i + 1} seen`);
    }
    await eventually(async () => ((await pool.query(poolStateQuery)).queuedJobs.length === 0 ? true : undefined), 20_000, 'queued jobs dropped at their expiry');
    await pool.signal(deletePoolSignal, {});
    await pool.result();
    const events = (await pool.fetchHistory()).events ?? [];
    const decisions = events.filter((e) => e.workflowTaskCompletedEventAttributes).length;
    // The timers that write the pool's glance late are not the pool's deadlines.
    const deadlineTimers = events.filter((e) => e.timerStartedEventAttributes && !isGlanceTimer(e));
    expect(decisions).toBeGreaterThanOrEqual(6);
    expect(deadlineTimers).toHaveLength(1);
    const deadlineTimerId = deadlineTimers[0]!.timerStartedEventAttributes!.timerId;
    expect(events.filter((e) => e.timerFiredEventAttributes?.timerId === deadlineTimerId)).toHaveLength(1);
  });

  it('backs off creating runners while they keep failing to bootstrap', async () => {
    const settings = poolSettings({ minIdleRunners: 1, bootstrapTimeout: 300 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, poolCreateBackoffInitialMs: 1_000, poolCreateBackoffMaxMs: 8_000 } });
    await new Promise((r) => setTimeout(r, 9_000));
    await pool.signal(deletePoolSignal, {});
    await pool.result();
    const creates = env.w.fake.calls('create').filter((c) => c.poolId === settings.name && c.outcome === 'created').map((c) => c.at);
    // Without backoff a 300 ms bootstrap timeout would make ~20 runners in 9 s; with 1, 2, 4 s waits only a handful.
    expect(creates.length).toBeGreaterThanOrEqual(3);
    expect(creates.length).toBeLessThanOrEqual(5);
    // Each wait is at least the doubled backoff (plus the failed runner's own short life).
    const gaps = creates.slice(1).map((t, i) => t - creates[i]!);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(1_000 * 2 ** i));
  });

  it('removes the registrations its runners left at GitHub before it closes, waiting for a busy one GitHub has not given up', async () => {
    const settings = poolSettings({ minIdleRunners: 0 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, busyRunnerLostGraceMs: 30_000 } });
    // A dead busy runner's registration and one whose removal failed: workflows long closed, registrations still there.
    const left = [`${settings.name}-0123456789`, `${settings.name}-abcdef0123`];
    const other = `${settings.name}x-0123456789`;
    // The same naming and labels, registered by another installation.
    const otherInstallation = `${settings.name}-fedcba9876`;
    const register = (name: string, installation = controllerLabel('test-controller')) =>
      env.w.github.createRunnerCredential({ scope: settings.github.scope, name, labels: [...settings.labels, installation], runnerGroupId: 1, workFolder: '_work', jit: true });
    for (const name of [...left, other]) await register(name);
    await register(otherInstallation, controllerLabel('another-installation'));
    env.w.github.busy.add(left[0]!);
    const listsBefore = env.w.github.calls.filter((c) => c.op === 'list').length;
    try {
      await pool.signal(deletePoolSignal, {});
      await eventually(async () => (env.w.github.calls.some((c) => c.op === 'remove' && c.name === left[1]) ? true : undefined), 20_000, 'the idle registration removed');
      // The busy one is asked for again; the pool stays open meanwhile.
      await eventually(async () => (env.w.github.calls.filter((c) => c.op === 'list').length >= listsBefore + 3 ? true : undefined), 20_000, 'the registrations looked at again');
      expect((await pool.describe()).status.name).toBe('RUNNING');
    } finally {
      env.w.github.busy.delete(left[0]!);
    }
    await pool.result();
    const stillRegistered = (await env.w.github.listRunners()).map((r) => r.name);
    expect(stillRegistered).not.toContain(left[0]);
    expect(stillRegistered).not.toContain(left[1]);
    // Another pool's naming is not this pool's to remove, nor another installation's runner.
    expect(stillRegistered).toContain(other);
    expect(stillRegistered).toContain(otherInstallation);
  });

  it('starts a large number of runners over several decisions, never more per decision than its bound', async () => {
    const settings = poolSettings({ minIdleRunners: 7, maxRunners: 10 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, maxStartsPerDecision: 3 });
    try {
      await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 7 ? true : undefined), 20_000, 'seven runners');
      const { events } = await pool.fetchHistory();
      const batches = (events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startRunners');
      // 3 + 3 + 1, each decision in a workflow task of its own.
      expect(batches).toHaveLength(3);
      const tasksWithStarts = new Set(batches.map((e) => String(e.activityTaskScheduledEventAttributes?.workflowTaskCompletedEventId)));
      expect(tasksWithStarts.size).toBe(3);
      // The next decision comes with whatever wakes the pool first, not after a timer of its own
      // (a busy server fired such a timer seconds late).
      const first = Number(batches[0]?.eventId);
      const last = Number(batches.at(-1)?.eventId);
      const timersBetween = (events ?? []).filter((e) => e.timerStartedEventAttributes && !isGlanceTimer(e) && Number(e.eventId) > first && Number(e.eventId) < last);
      expect(timersBetween).toEqual([]);
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});


describe('runnerPool hearing of a runner only once its job is done', () => {
  it('does not take it for a failed bootstrap, and keeps making runners for queued jobs without a pause', async () => {
    // A runner whose agent came up, took its job and finished it while its worker was behind hears
    // all of it in one workflow task, and first tells its pool it is gone, naming the job.
    const settings = poolSettings({ minIdleRunners: 0, maxRunners: 1 });
    const backoffMs = 20_000;
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, poolCreateBackoffInitialMs: backoffMs, poolCreateBackoffMaxMs: backoffMs } });
    try {
      for (let i = 0; i < 3; i++) {
        const jobId = 900 + i;
        await pool.signal(jobQueuedSignal, { jobId, labels: ['linux'], queuedAt: new Date().toISOString() });
        const name = await eventually(async () => (await pool.query(poolStateQuery)).runners[0]?.name, 10_000, `a runner for job ${jobId}`);
        const runner = env.client.workflow.getHandle(runnerWorkflowId(name));
        await eventually(async () => ((await runner.query(stateQuery)).status === 'running' ? true : undefined), 10_000, `runner ${name} running`);
        await Promise.all([runner.signal(jobStartedSignal, { jobId }), runner.signal(jobCompletedSignal, { jobId, conclusion: 'success' })]);
        const started = Date.now();
        await eventually(async () => ((await pool.query(poolStateQuery)).runners.some((r) => r.name === name) ? undefined : true), 10_000, `runner ${name} gone from its pool`);
        // Counted as a failed bootstrap, the next runner would wait out the backoff.
        expect(Date.now() - started).toBeLessThan(backoffMs);
      }
      const jobId = 910;
      const asked = Date.now();
      await pool.signal(jobQueuedSignal, { jobId, labels: ['linux'], queuedAt: new Date().toISOString() });
      await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 1 ? true : undefined), 10_000, 'a runner for the next job, with no pause');
      expect(Date.now() - asked).toBeLessThan(backoffMs / 2);
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});
