/**
 * A scale-set pool given a new scale set name: its listener renames the scale set at GitHub, as
 * actions-runner-controller does, keeping its id, its session, its runners and the jobs they run,
 * and `runs-on` reaches it by the new name. A rename GitHub refuses leaves the scale set listening
 * under its old name, and one cut short by the listener's end is finished by its successor, on
 * the same scale set.
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
  runnerflowCli,
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
const newName = () => uniqueName('renamed').toLowerCase().slice(0, 40);

const listeningPool = () => listeningPoolOf(stack, { maxRunners: 2, scaleSet: { minRunners: 0 } });

const rename = (pool: ReturnType<typeof scaleSetPool>, name: string) =>
  apiRequest(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, scaleSet: { ...pool.scaleSet, name } });

const listenerWhen = (pool: string, ok: (s: ScaleSetView) => boolean, what: string) => listenerWhenOf(stack, pool, ok, what);

const runsAJob = (runsOn: string) => runsAJobOf(stack, runsOn);
const deletePool = (pool: string) => deletePoolOf(stack, pool);

describe("a scale-set pool's scale set name, changed", () => {
  it('renames the scale set in place, with its id, its session and the job its runner is running, and runs-on reaches it by the new name', async () => {
    const { pool, first, scaleSetId } = await listeningPool();
    const long = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name], durationMs: 5_000 });
    await eventually(() => stack.sim.jobs().find((j) => j.id === long.id && j.status === 'in_progress'), 30_000, 'a long job running');

    const name = newName();
    const changed = await rename(pool, name);
    expect(changed.status, JSON.stringify(changed.body)).toBe(202);
    const renamed = await listenerWhen(pool.name, (s) => s.nameAtGitHub === name, 'the listener renaming the scale set');
    expect(renamed).toMatchObject({ name, scaleSetId, sessionId: first.sessionId, sessionsOpened: first.sessionsOpened, runnerGroupAtGitHub: 'Default' });
    expect(renamed.lastError).toBeUndefined();
    expect(atGitHub(scaleSetId)).toMatchObject({ name, runnerGroupName: 'Default', labels: [name, 'self-hosted', 'linux'] });
    expect(namedAtGitHub(pool.name)).toHaveLength(0);
    expect(stack.sim.jobs().find((j) => j.id === long.id)?.status).toBe('in_progress');
    expect((await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery)).settings.scaleSet?.name).toBe(name);
    expect(await poolShow(stack, pool.name)).toMatch(new RegExp(`Scale set: +${name} \\(id ${scaleSetId}, listening\\)`));

    await eventually(() => stack.sim.jobs().find((j) => j.id === long.id && j.status === 'completed' && j.conclusion === 'success'), 30_000, 'the long job finished');
    await runsAJob(name);
    await deletePool(pool.name);
    expect(atGitHub(scaleSetId)).toBeUndefined();
  });

  it('leaves the scale set listening under its old name while another has the new one, says why, and renames it once it can', async () => {
    const { pool, scaleSetId } = await listeningPool();
    const name = newName();
    const namesake = stack.sim.addScaleSet({ kind: 'org', org: 'acme' }, name, [name]);
    expect((await rename(pool, name)).status).toBe(202);
    const refused = await listenerWhen(pool.name, (s) => /not renamed/.test(s.lastError ?? ''), 'the rename refused');
    expect(refused.lastError).toContain(`scale set ${scaleSetId} not renamed "${name}"; it is still "${pool.name}" and runs jobs under that name: `);
    expect(refused.lastError).toMatch(/409/);
    expect(refused).toMatchObject({ status: 'listening', name, nameAtGitHub: pool.name });
    expect(atGitHub(scaleSetId)?.name).toBe(pool.name);
    expect(await poolShow(stack, pool.name)).toMatch(new RegExp(`Scale set: +${pool.name} \\(renaming to ${name}\\) \\(id ${scaleSetId}, listening\\)`));
    await scaleSetDiffersShown(stack, pool.name, { name: 1 });
    // Jobs that name the old name still run meanwhile.
    await runsAJob(pool.name);

    // The namesake goes: the next try (after `githubMaxInterval`) renames the scale set.
    stack.sim.deleteScaleSet(namesake);
    const renamed = await listenerWhen(pool.name, (s) => s.nameAtGitHub === name, 'the scale set renamed once the name is free');
    expect(renamed.lastError).toBeUndefined();
    expect(atGitHub(scaleSetId)?.name).toBe(name);
    await scaleSetDiffersShown(stack, pool.name, {});
    await runsAJob(name);
    await deletePool(pool.name);
  });

  it('given back its old name before GitHub took the new one: the complaint goes, and nothing is renamed', async () => {
    const { pool, scaleSetId } = await listeningPool();
    const name = newName();
    const namesake = stack.sim.addScaleSet({ kind: 'org', org: 'acme' }, name, [name]);
    expect((await rename(pool, name)).status).toBe(202);
    await listenerWhen(pool.name, (s) => /not renamed/.test(s.lastError ?? ''), 'the rename refused');
    await scaleSetDiffersShown(stack, pool.name, { name: 1 });
    const calls = stack.sim.stats().actionsCalls['update-scale-set'] ?? 0;

    expect((await rename(pool, pool.name)).status).toBe(202);
    const back = await listenerWhen(pool.name, (s) => s.name === pool.name, 'the old name taken back');
    expect(back.lastError).toBeUndefined();
    expect(back).toMatchObject({ nameAtGitHub: pool.name, status: 'listening', scaleSetId });
    await scaleSetDiffersShown(stack, pool.name, {});
    expect(atGitHub(scaleSetId)?.name).toBe(pool.name);
    expect(stack.sim.stats().actionsCalls['update-scale-set'] ?? 0).toBe(calls);
    stack.sim.deleteScaleSet(namesake);
    await runsAJob(pool.name);
    await deletePool(pool.name);
  });

  it('given through the CLI, is tried again through a GitHub outage', async () => {
    const { pool, scaleSetId } = await listeningPool();
    const name = newName();
    // A whole round of the listener's tries fails: it listens on, and tries again later.
    stack.sim.setFault({ kind: 'server-error', status: 503, operation: 'update-scale-set', times: 3 });
    expect(await runnerflowCli(stack, ['pool', 'update', pool.name, '--scale-set-name', name])).toContain(`pool ${pool.name} update sent`);
    await listenerWhen(pool.name, (s) => /not renamed.*503/.test(s.lastError ?? ''), 'the rename failed on the outage');
    await listenerWhen(pool.name, (s) => s.nameAtGitHub === name && s.lastError === undefined, 'the scale set renamed after the outage');
    expect(atGitHub(scaleSetId)?.name).toBe(name);
    await deletePool(pool.name);
  });

  it('given as a name GitHub would refuse, is refused through the API with where and why; sent by hand to the listener, is ignored and the rest taken', async () => {
    const { pool, scaleSetId } = await listeningPool();
    const refused = await rename(pool, 'has space');
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'validation_failed', details: [{ path: 'scaleSet.name' }] } });

    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    await handle.signal(updateListenerSignal, { minRunners: 0, labels: pool.labels!, maxRunners: 5, name: 'has space' });
    const after = await listenerWhen(pool.name, (s) => s.maxRunners === 5, 'maxRunners taken');
    expect(after).toMatchObject({ name: pool.name, nameAtGitHub: pool.name });
    expect(atGitHub(scaleSetId)?.name).toBe(pool.name);
    await deletePool(pool.name);
  });

  it('is finished on the same scale set by a listener started after the one that could not rename it ended, not made again under the new name', async () => {
    const { pool, scaleSetId } = await listeningPool();
    const name = newName();
    const namesake = stack.sim.addScaleSet({ kind: 'org', org: 'acme' }, name, [name]);
    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const firstRun = (await handle.describe()).runId;
    expect((await rename(pool, name)).status).toBe(202);
    await listenerWhen(pool.name, (s) => /not renamed/.test(s.lastError ?? ''), 'the rename refused');
    // Gone before its next try, with its session held: its successor waits for that to lapse.
    await handle.terminate('test: listener gone');
    stack.sim.deleteScaleSet(namesake);

    const successor = await successorListening(stack, pool.name, firstRun, (s) => s.nameAtGitHub === name, 'a new listener that renamed the scale set');
    expect(successor.scaleSetId).toBe(scaleSetId);
    expect(atGitHub(scaleSetId)?.name).toBe(name);
    expect(namedAtGitHub(name)).toHaveLength(1);
    await runsAJob(name);
    await deletePool(pool.name);
    expect(namedAtGitHub(name)).toHaveLength(0);
  });
});
