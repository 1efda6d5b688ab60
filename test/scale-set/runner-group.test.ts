/**
 * A scale-set pool given another runner group: its listener moves the scale set there, as
 * actions-runner-controller does, keeping the scale set's id, its session and its runners. A move
 * GitHub refuses leaves the scale set listening where it is, and one cut short by the listener's
 * end is finished by its successor, on the same scale set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { scaleSetListenerId, updateListenerSignal, type ScaleSetView } from '../../workflows/scale-set-messages';
import { eventually, uniqueName } from '../support/temporal';
import {
  deletePool as deletePoolOf,
  listenerWhen as listenerWhenOf,
  listeningPool as listeningPoolOf,
  poolShow,
  runsAJob as runsAJobOf,
  scaleSetDiffersShown,
  scaleSetPool,
  successorListening,
  useScaleSetStack,
} from './support/stack';

/** The pool's next look for its listener comes soon: a listener that ended is started again within it. */
const AUDIT_MS = 2_000;
const stack = useScaleSetStack(500, { poolAuditInterval: AUDIT_MS });

afterEach(() => stack.sim.clearFaults());

const atGitHub = (scaleSetId: number) => stack.sim.scaleSets().find((set) => set.id === scaleSetId);
const namedAtGitHub = (name: string) => stack.sim.scaleSets().filter((set) => set.name === name);

const listeningPool = () => listeningPoolOf(stack, { maxRunners: 2, scaleSet: { minRunners: 0 } });

const put = (pool: ReturnType<typeof scaleSetPool>, changes: Record<string, unknown>) =>
  apiRequest(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, ...changes });

const listenerWhen = (pool: string, ok: (s: ScaleSetView) => boolean, what: string) => listenerWhenOf(stack, pool, ok, what);

const differsShown = (pool: string, expected: Record<string, number>) => scaleSetDiffersShown(stack, pool, expected);

const runsAJob = (runsOn: string) => runsAJobOf(stack, runsOn);
const deletePool = (pool: string) => deletePoolOf(stack, pool);

describe("a scale-set pool's runner group, changed", () => {
  it('moves the scale set there, with its id, its session and the job its runner is running, and its jobs run on', async () => {
    const group = uniqueName('group');
    stack.sim.addRunnerGroup(group);
    const { pool, first, scaleSetId } = await listeningPool();
    const long = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name], durationMs: 5_000 });
    await eventually(() => stack.sim.jobs().find((j) => j.id === long.id && j.status === 'in_progress'), 30_000, 'a long job running');

    const changed = await put(pool, { runnerGroup: group });
    expect(changed.status, JSON.stringify(changed.body)).toBe(202);
    const moved = await listenerWhen(pool.name, (s) => s.runnerGroupAtGitHub === group, 'the listener moving the scale set');
    expect(atGitHub(scaleSetId)).toMatchObject({ runnerGroupName: group, name: pool.name });
    expect(moved).toMatchObject({ runnerGroup: group, scaleSetId, sessionId: first.sessionId, sessionsOpened: first.sessionsOpened });
    expect(moved.lastError).toBeUndefined();
    // The scale set it made has the pool's labels: nothing to tell.
    expect(moved.labelsAtGitHub).toBeUndefined();
    expect(namedAtGitHub(pool.name)).toHaveLength(1);
    expect(stack.sim.jobs().find((j) => j.id === long.id)?.status).toBe('in_progress');
    expect((await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery)).settings.runnerGroup).toBe(group);

    await eventually(() => stack.sim.jobs().find((j) => j.id === long.id && j.status === 'completed' && j.conclusion === 'success'), 30_000, 'the long job finished');
    await runsAJob(pool.name);
    await deletePool(pool.name);
    expect(atGitHub(scaleSetId)).toBeUndefined();
  });

  it('leaves the scale set listening where it is while GitHub refuses the move, says why, and moves it once it can', async () => {
    const group = uniqueName('later');
    const { pool, scaleSetId } = await listeningPool();
    expect((await put(pool, { runnerGroup: group })).status).toBe(202);
    const refused = await listenerWhen(pool.name, (s) => /not moved/.test(s.lastError ?? ''), 'the move refused');
    expect(refused.lastError).toContain(`scale set ${scaleSetId} not moved to runner group "${group}"; it stays in "Default" and runs jobs from there: runner group "${group}" not found`);
    expect(refused.status).toBe('listening');
    expect(refused.runnerGroupAtGitHub).toBe('Default');
    expect(atGitHub(scaleSetId)?.runnerGroupName).toBe('Default');
    expect(await poolShow(stack, pool.name)).toMatch(new RegExp(`Runner group: +Default \\(moving to ${group}\\)`));
    await differsShown(pool.name, { runner_group: 1 });
    await runsAJob(pool.name);

    // The operator makes the group: the next try (after `githubMaxInterval`) moves the scale set.
    stack.sim.addRunnerGroup(group);
    const moved = await listenerWhen(pool.name, (s) => s.runnerGroupAtGitHub === group, 'the scale set moved once the group exists');
    expect(moved.lastError).toBeUndefined();
    expect(atGitHub(scaleSetId)?.runnerGroupName).toBe(group);
    expect(await poolShow(stack, pool.name)).toMatch(new RegExp(`Runner group: +${group}\\n`));
    await differsShown(pool.name, {});
    await deletePool(pool.name);
  });

  it('given back its old group before GitHub moved it: the complaint goes, and nothing is moved', async () => {
    const { pool, scaleSetId } = await listeningPool();
    expect((await put(pool, { runnerGroup: uniqueName('never-made') })).status).toBe(202);
    await listenerWhen(pool.name, (s) => /not moved/.test(s.lastError ?? ''), 'the move refused');
    const calls = stack.sim.stats().actionsCalls['update-scale-set'] ?? 0;
    expect((await put(pool, { runnerGroup: 'Default' })).status).toBe(202);
    const back = await listenerWhen(pool.name, (s) => s.runnerGroup === 'Default', 'the old group taken back');
    expect(back.lastError).toBeUndefined();
    expect(back).toMatchObject({ runnerGroupAtGitHub: 'Default', status: 'listening', scaleSetId });
    await differsShown(pool.name, {});
    expect(stack.sim.stats().actionsCalls['update-scale-set'] ?? 0).toBe(calls);
    await deletePool(pool.name);
  });

  it('is tried again through a GitHub outage', async () => {
    const group = uniqueName('outage');
    stack.sim.addRunnerGroup(group);
    const { pool, scaleSetId } = await listeningPool();
    // A whole round of the listener's tries fails: it listens on, and tries again later.
    stack.sim.setFault({ kind: 'server-error', status: 503, operation: 'update-scale-set', times: 3 });
    expect((await put(pool, { runnerGroup: group })).status).toBe(202);
    await listenerWhen(pool.name, (s) => /not moved.*503/.test(s.lastError ?? ''), 'the move failed on the outage');
    await listenerWhen(pool.name, (s) => s.runnerGroupAtGitHub === group && s.lastError === undefined, 'the scale set moved after the outage');
    expect(atGitHub(scaleSetId)?.runnerGroupName).toBe(group);
    await deletePool(pool.name);
  });

  it('given as blank through the API, is refused with where and why, and the pool keeps its group', async () => {
    const { pool } = await listeningPool();
    const refused = await put(pool, { runnerGroup: '  ' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'validation_failed', details: [{ path: 'runnerGroup', message: 'must name a runner group (GitHub\'s own is "Default")' }] } });
    expect((await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery)).settings.runnerGroup).toBe('Default');
    await deletePool(pool.name);
  });

  it('sent by hand to the listener as no runner group, is ignored, and the rest of that signal taken', async () => {
    const { pool, scaleSetId } = await listeningPool();
    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const base = { minRunners: 0, labels: pool.labels! };
    await handle.signal(updateListenerSignal, { ...base, maxRunners: 5, runnerGroup: ' ' });
    await listenerWhen(pool.name, (s) => s.maxRunners === 5, 'maxRunners taken');
    await handle.signal(updateListenerSignal, { ...base, maxRunners: 3, runnerGroup: 42 as unknown as string });
    const after = await listenerWhen(pool.name, (s) => s.maxRunners === 3, 'maxRunners taken again');
    expect(after).toMatchObject({ runnerGroup: 'Default', runnerGroupAtGitHub: 'Default' });
    expect(atGitHub(scaleSetId)?.runnerGroupName).toBe('Default');
    await deletePool(pool.name);
  });

  it("is finished on the same scale set by a listener started after the one that could not move it ended, not made again in the new group", async () => {
    const group = uniqueName('cut-short');
    const { pool, scaleSetId } = await listeningPool();
    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const firstRun = (await handle.describe()).runId;
    expect((await put(pool, { runnerGroup: group })).status).toBe(202);
    await listenerWhen(pool.name, (s) => /not moved/.test(s.lastError ?? ''), 'the move refused');
    // Gone before its next try, with its session held: its successor waits for that to lapse.
    await handle.terminate('test: listener gone');
    stack.sim.addRunnerGroup(group);

    const successor = await successorListening(stack, pool.name, firstRun, (s) => s.runnerGroupAtGitHub === group, 'a new listener that moved the scale set');
    expect(successor.scaleSetId).toBe(scaleSetId);
    expect(atGitHub(scaleSetId)?.runnerGroupName).toBe(group);
    expect(namedAtGitHub(pool.name)).toHaveLength(1);
    await runsAJob(pool.name);
    await deletePool(pool.name);
    expect(namedAtGitHub(pool.name)).toHaveLength(0);
  });
});
