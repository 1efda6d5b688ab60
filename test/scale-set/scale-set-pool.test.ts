import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { poolSettingsSchema, type PoolSettings } from '../../domain/pool';
import { runnerWorkflowId } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery, poolWorkflowId, RUNNER_POOL_WORKFLOW, updatePoolSignal, type RunnerPoolInput } from '../../workflows/pool-messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { RUNNER_POOL } from '../../workflows/search-attributes';
import { resolveTimings } from '../../domain/timings';
import { eventually } from '../support/temporal';
import { listenerState, listeningPool, poolShow, scaleSetDiffersShown, scaleSetPool, useScaleSetStack } from './support/stack';
import type { ScaleSetView } from '../../workflows/scale-set-messages';

const stack = useScaleSetStack(1_500);

/** Scale-set runners alive in the simulator right now. */
const scaleSetRunners = (scaleSetId: number) => stack.sim.runners().filter((r) => (r as { scaleSetId?: number }).scaleSetId === scaleSetId);

/** Queues `count` jobs for the pool's scale set and waits for all to complete, counting the most runners alive at once. */
async function runJobs(pool: string, scaleSetId: number, count: number) {
  const jobs = Array.from({ length: count }, () => stack.sim.queueJob({ repository: 'acme/app', labels: [pool] }));
  let most = 0;
  const done = await eventually(
    () => {
      most = Math.max(most, scaleSetRunners(scaleSetId).length);
      const finished = stack.sim.jobs().filter((j) => jobs.some((q) => q.id === j.id) && j.status === 'completed');
      return finished.length === jobs.length ? finished : undefined;
    },
    60_000,
    'all scale-set jobs completed',
  );
  return { done, most };
}

/** The listener once no job is assigned and no runner is left. */
function settledListener(pool: string, scaleSetId: number): Promise<ScaleSetView> {
  return eventually(async () => {
    const s = await listenerState(stack.client, pool);
    return s && s.statistics?.totalAssignedJobs === 0 && scaleSetRunners(scaleSetId).length === 0 ? s : undefined;
  }, 20_000, 'no runners left');
}

describe('a pool in scaleSet mode', () => {
  it("passes its settings to a listener an earlier run started, even ones that earlier run took too late to pass on", async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const listening = await eventually(async () => {
      const s = await listenerState(stack.client, pool.name);
      return s?.status === 'listening' ? s : undefined;
    }, 20_000, 'listener listening');
    expect(listening.maxRunners).toBe(1);

    // The pool's next run, as a continue-as-new whose predecessor took maxRunners 3 (settings version
    // 2) while it waited to continue, and never told the listener: it is still running, unchanged.
    const handle = stack.client.workflow.getHandle(poolWorkflowId(pool.name));
    const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const input = defaultPayloadConverter.fromPayload<RunnerPoolInput>(started!.input!.payloads![0]!);
    await handle.terminate('replaced by a run carrying newer settings');
    const settings = poolSettingsSchema.parse({ ...input.settings, maxRunners: 3 });
    const next = await stack.client.workflow.start('runnerPool', {
      workflowId: poolWorkflowId(pool.name),
      taskQueue: stack.loaded.config.temporal.taskQueue,
      args: [{ ...input, settings, carried: { settingsVersion: 2, runners: [], handledJobEvents: [], runnerSeq: 0, deleting: false, consecutiveBootstrapFailures: 0 } }],
    });
    await eventually(async () => ((await listenerState(stack.client, pool.name))?.maxRunners === 3 ? true : undefined), 20_000, 'listener told maxRunners 3');
    await next.signal(deletePoolSignal, {});
    await next.result();
  });

  it('runs jobs assigned to its scale set on fresh ephemeral runners, never more than maxRunners, and scales back to zero', async () => {
    const { pool, first: listening } = await listeningPool(stack, { maxRunners: 2 });

    const { done, most } = await runJobs(pool.name, listening.scaleSetId!, 5);
    expect(done.every((j) => j.conclusion === 'success')).toBe(true);
    expect(new Set(done.map((j) => j.runnerName)).size).toBe(5);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
    expect(stack.sim.scaleSetMaxCapacity(listening.scaleSetId!)).toBe(2);

    const settled = await settledListener(pool.name, listening.scaleSetId!);
    expect(settled.desiredRunners).toBe(0);
    expect(settled.jobsAcquired).toBe(5);
    expect(new Set(settled.recentMessageIds).size).toBe(settled.recentMessageIds.length);

    const shown = await apiRequest(stack, 'GET', `/api/v1/pools/${pool.name}`);
    expect(shown.body).toMatchObject({ scaleSet: { name: pool.name, scaleSetId: listening.scaleSetId, status: 'listening', desiredRunners: 0 } });

    const cli = await poolShow(stack, pool.name);
    expect(cli).toMatch(new RegExp(`Scale set:\\s+${pool.name} \\(id ${listening.scaleSetId}, listening\\)`));
    expect(cli).toMatch(/Session:\s+[0-9a-f-]{36}/);
    expect(cli).toMatch(/Desired runners:\s+0 = min\(max 2, min 0 \+ assigned 0\)/);
  });

  it("runs jobs GitHub's broker assigns to its scale set with no offer to acquire, never more than maxRunners", async () => {
    const { pool, first: listening } = await listeningPool(stack, { maxRunners: 2 });
    const acquireCalls = () => stack.sim.stats().actionsCalls['acquire-jobs'] ?? 0;
    const acquiresBefore = acquireCalls();
    stack.sim.setScaleSetAssignment('broker');
    try {
      const { done, most } = await runJobs(pool.name, listening.scaleSetId!, 4);
      expect(done.every((j) => j.conclusion === 'success')).toBe(true);
      expect(new Set(done.map((j) => j.runnerName)).size).toBe(4);
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(2);
      // The statistics alone drove the count: nothing was offered, so nothing was acquired.
      expect((await settledListener(pool.name, listening.scaleSetId!)).jobsAcquired).toBe(0);
      expect(acquireCalls()).toBe(acquiresBefore);
    } finally {
      stack.sim.setScaleSetAssignment('acquire');
    }
    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
  });

  it('keeps minRunners warm, runs a job on a warm runner and warms a replacement', async () => {
    // The scale set's statistics may still count the finished job as assigned for a moment, and
    // ask for a second runner beside the replacement (as they would of actions-runner-controller):
    // a short idle timeout lets that one go again before the count of warm runners is read.
    const pool = scaleSetPool({ maxRunners: 3, scaleSet: { minRunners: 1 }, idleTimeout: 5_000 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const s = await eventually(async () => {
      const state = await listenerState(stack.client, pool.name);
      return state?.scaleSetId !== undefined ? state : undefined;
    }, 20_000, 'scale set');
    const warm = await eventually(() => {
      const idle = stack.sim.agents().filter((a) => a.state === 'idle' && stack.sim.runners().some((r) => r.name === a.runnerName && (r as { scaleSetId?: number }).scaleSetId === s.scaleSetId));
      return idle.length === 1 ? idle[0] : undefined;
    }, 30_000, 'one warm runner');
    const job = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    const ran = await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, 'job on the warm runner');
    expect(ran.runnerName).toBe(warm.runnerName);
    await eventually(() => {
      const idle = stack.sim.agents().filter((a) => a.state === 'idle' && a.runnerName !== warm.runnerName && stack.sim.runners().some((r) => r.name === a.runnerName && (r as { scaleSetId?: number }).scaleSetId === s.scaleSetId));
      return idle.length === 1;
    }, 30_000, 'a new warm runner');
  });

  it('refuses, with what and why, settings that would change its scale set, takes the others, and ignores such settings sent by hand', async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    await eventually(async () => ((await listenerState(stack.client, pool.name))?.status === 'listening' ? true : undefined), 20_000, 'listener listening');
    const handle = stack.client.workflow.getHandle(poolWorkflowId(pool.name));
    const settings: PoolSettings = (await handle.query(poolStateQuery)).settings;
    type Refusal = { error: { code: string; message: string; details: { path: string; message: string }[] } };
    const put = (changes: Record<string, unknown>) => apiRequest(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, ...changes });

    const relabelled = await put({ labels: ['self-hosted', 'gpu'] });
    expect(relabelled.status, JSON.stringify(relabelled.body)).toBe(409);
    const refusal = (relabelled.body as Refusal).error;
    expect(refusal.code).toBe('scale_set_change');
    expect(refusal.message).toBe(
      `pool ${pool.name} cannot change its scale set in place: labels differ from the labels GitHub gave the scale set when it was created; delete the pool and create it again`,
    );
    // A new name alone is taken (the listener renames the scale set), but not beside such a change.
    const several = await put({ scaleSet: { name: 'another-scale-set' }, github: { credentials: 'default', scope: { kind: 'org', org: 'elsewhere' } }, labels: ['self-hosted', 'gpu'] });
    expect(several.status, JSON.stringify(several.body)).toBe(409);
    expect((several.body as Refusal).error.details.map((d) => d.path)).toEqual(['github.scope', 'labels']);
    // Labels in another order or case are the same labels to GitHub; other settings change in place.
    const taken = await put({ labels: ['Linux', 'self-hosted'], maxRunners: 2 });
    expect(taken.status).toBe(202);
    await eventually(async () => ((await listenerState(stack.client, pool.name))?.maxRunners === 2 ? true : undefined), 20_000, 'listener told maxRunners 2');

    // Sent by hand, past the API: the pool keeps its scale set; the next settings are taken.
    await handle.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 2, github: { ...settings.github, scope: { kind: 'org', org: 'elsewhere' } } } });
    await handle.signal(updatePoolSignal, { settings: { ...settings, maxRunners: 1 } });
    const after = await eventually(async () => {
      const view = await handle.query(poolStateQuery);
      return view.settings.maxRunners === 1 ? view : undefined;
    }, 20_000, 'the settings sent after taken');
    expect(after.settings.github.scope).toEqual(settings.github.scope);
    expect(after.settingsVersion).toBe(3);

    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
  });

  it('has its runner hear of its job under both its ids, the request id from the listener and the job id from the webhook, and end once', async () => {
    const { pool } = await listeningPool(stack, { maxRunners: 1 });
    // Long enough for the webhook's in_progress to reach the runner while it runs, on a loaded machine too.
    const job = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name], durationMs: 8_000 });
    const done = await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, 'the job run');
    expect(done.requestId).toBeDefined();
    expect(done.requestId).not.toBe(job.id);
    const runner = stack.client.workflow.getHandle(runnerWorkflowId(done.runnerName!));
    await runner.result();
    const signalled = (name: string) =>
      runner.fetchHistory().then((h) =>
        (h.events ?? [])
          .map((e) => e.workflowExecutionSignaledEventAttributes)
          .filter((a) => a?.signalName === name)
          .map((a) => (defaultPayloadConverter.fromPayload(a!.input!.payloads![0]!) as { jobId: number }).jobId),
      );
    expect(new Set(await signalled('jobStarted'))).toEqual(new Set([done.requestId, job.id]));
    // It ends on whichever completion comes first; the other finds it closed, or is ignored.
    const completions = await signalled('jobCompleted');
    expect(completions.length).toBeGreaterThan(0);
    expect(completions.every((id) => id === done.requestId || id === job.id)).toBe(true);
    expect((await runner.describe()).status.name).toBe('COMPLETED');
    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
  });

  it("tells of a scale set found by its name with labels other than the pool's, and still deletes it with the pool", async () => {
    const pool = scaleSetPool({ maxRunners: 1 });
    // Made by another tool (or an older runnerflow), without the pool's name or labels among its own.
    const found = stack.sim.addScaleSet({ kind: 'org', org: 'acme' }, pool.name, [`${pool.name}-old`]);
    const { first } = await listeningPool(stack, pool);
    expect(first.scaleSetId).toBe(found);
    expect(first.labelsAtGitHub).toEqual([`${pool.name}-old`]);
    expect(await poolShow(stack, pool.name)).toMatch(new RegExp(`Labels at GitHub: +${pool.name}-old: not the pool's; jobs naming a label the scale set lacks never reach it`));
    await scaleSetDiffersShown(stack, pool.name, { labels: 1 });
    // Its session makes it the pool's: it goes with the pool, so that the pool made again makes it with its labels.
    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
    expect(stack.sim.scaleSets().some((set) => set.id === found)).toBe(false);
  });

  it('refuses a change of its scale set when its memo predates naming the scale set, by asking the pool', async () => {
    const settings = poolSettingsSchema.parse(scaleSetPool({ maxRunners: 1 }));
    const { scaleSet: _named, ...predating } = poolMemoOf(settings);
    const handle = await stack.client.workflow.start(RUNNER_POOL_WORKFLOW, {
      workflowId: poolWorkflowId(settings.name),
      taskQueue: stack.loaded.config.temporal.taskQueue,
      args: [{ settings, timings: resolveTimings(stack.loaded.config.timings) }],
      typedSearchAttributes: [{ key: RUNNER_POOL, value: settings.name }],
      memo: predating,
    });
    const body = { ...settings, labels: [...settings.labels, 'gpu'] };
    const refused = await apiRequest(stack, 'PUT', `/api/v1/pools/${settings.name}`, body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect((refused.body as { error: { details: { path: string }[] } }).error.details.map((d) => d.path)).toEqual(['labels']);
    expect((await apiRequest(stack, 'PUT', `/api/v1/pools/${settings.name}`, { ...settings, maxRunners: 2 })).status).toBe(202);
    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${settings.name}`)).status).toBeLessThan(300);
    await handle.result();
  });

  it('deleting the pool removes its runners, its session and its scale set', async () => {
    const pool = scaleSetPool({ maxRunners: 2, scaleSet: { minRunners: 2 }, idleTimeout: 60_000 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const s = await eventually(async () => {
      const state = await listenerState(stack.client, pool.name);
      return state?.scaleSetId !== undefined && scaleSetRunners(state.scaleSetId).length === 2 ? state : undefined;
    }, 30_000, 'two warm runners');
    expect(stack.sim.scaleSets().find((x) => x.id === s.scaleSetId)?.session).toBeDefined();

    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
    await eventually(() => !stack.sim.scaleSets().some((x) => x.id === s.scaleSetId), 30_000, 'scale set deleted');
    expect(scaleSetRunners(s.scaleSetId!)).toHaveLength(0);
    const final = await stack.client.workflow.getHandle(`scaleset/${pool.name}`).result();
    expect(final).toMatchObject({ status: 'stopped' });
    expect(final.sessionId).toBeUndefined();
  });
});
