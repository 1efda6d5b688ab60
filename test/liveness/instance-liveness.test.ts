import { describe, expect, it } from 'vitest';
import { healthReportSignal, jobStartedSignal, stateQuery } from '../../workflows/messages';
import type { runnerInstance } from '../../workflows/runner-instance';
import { expectLegalChain, startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, uniqueName } from '../support/temporal';
import { addProvider, idleInstance, LIVENESS_TIMINGS, runLiveness, useLivenessRig, waitUntilListedRunning } from './helpers';

const rig = useLivenessRig();

describe('machine pass', () => {
  it('an idle runner whose machine vanished leaves after a second look, with the reason "machine gone"', async () => {
    const provider = addProvider(rig);
    const { name, handle } = await idleInstance(rig, provider.name);
    provider.fake.removeInstance(name);

    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    expect(report).toMatchObject({ instances: 1, listings: 1, signalled: [{ name, finding: 'machine_gone' }], failed: [] });
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    const leaving = final.transitions.find((t) => t.to === 'pending_delete');
    expect(leaving?.reason).toBe(`machine gone (not listed by provider ${provider.name}); still so after the 1 s grace period`);
    expect(expectLegalChain(final)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'deleted']);
  });

  it('an idle runner whose machine one listing left out stays when the second look finds the machine', async () => {
    const provider = addProvider(rig);
    const { name, handle } = await idleInstance(rig, provider.name);
    // What a listing that missed a machine EC2 has not indexed yet reports.
    await handle.signal(healthReportSignal, { finding: 'machine_gone', detail: `not listed by provider ${provider.name}` });
    await eventually(async () => ((await handle.query(stateQuery)).health ? true : undefined), 5_000, 'the finding taken');
    await eventually(async () => ((await handle.query(stateQuery)).health ? undefined : true), 10_000, 'the finding settled');
    const state = await handle.query(stateQuery);
    expect(state.status).toBe('running');
    expect(state.transitions.map((t) => t.to)).toEqual(['creating', 'running']);
    expect(provider.fake.instance(name)).toBeDefined();
    await handle.signal('forceDelete', { reason: 'test done' });
    await handle.result();
  });

  it('an idle runner whose machine stopped leaves with "machine stopped"; healthy ones get no signal', async () => {
    const provider = addProvider(rig);
    const dead = await idleInstance(rig, provider.name);
    const healthy = await idleInstance(rig, provider.name);
    provider.fake.setStatus(dead.name, 'stopped', 'spot instance reclaimed');

    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    expect(report.signalled).toEqual([{ name: dead.name, finding: 'machine_stopped' }]);
    const final = await dead.handle.result();
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toBe(`machine stopped (${provider.name}: spot instance reclaimed)`);
    expect((await healthy.handle.query(stateQuery)).status).toBe('running');
    await healthy.handle.signal('forceDelete', { reason: 'test done' });
  });

  it('an instance still creating is neither listed nor reaped, even when told its machine is gone', async () => {
    const provider = addProvider(rig);
    const name = uniqueName('creating');
    provider.fake.setFault('create', { delayMs: 2_500 });
    const handle = await startInstance(rig.client, rig.worker.taskQueue, instanceInput(name, { provider: provider.name, timings: LIVENESS_TIMINGS }));
    await waitForStatus(handle, 'creating');
    await handle.signal(healthReportSignal, { finding: 'machine_gone', detail: 'sent while creating' });
    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    expect(report.signalled).toEqual([]);
    const state = await waitForStatus(handle, 'running');
    expect(state.health).toBeUndefined();
    expect(state.transitions.map((t) => t.to)).toEqual(['creating', 'running']);
    await handle.signal('forceDelete', { reason: 'test done' });
    await handle.result();
  });

  it('a pooled runner whose pool no longer runs is asked to leave; a runner no pool started stays', async () => {
    const provider = addProvider(rig);
    const goneIn = uniqueName('deleted-pool');
    const orphan = await idleInstance(rig, provider.name, { input: { pool: goneIn, notifyPool: true } });
    // Not started by a pool: its pool name is only a label, and no pass asks it to leave.
    const standalone = await idleInstance(rig, provider.name, { input: { pool: goneIn } });

    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    expect(report).toMatchObject({ instances: 2, signalled: [], orphaned: [{ name: orphan.name, pool: goneIn }], uncounted: [], failed: [] });
    const final = await orphan.handle.result();
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toBe(`pool ${goneIn} no longer exists`);
    expect((await standalone.handle.query(stateQuery)).status).toBe('running');
    await standalone.handle.signal('forceDelete', { reason: 'test done' });
  });

  it('one provider listing per pass, however many runners there are', async () => {
    const provider = addProvider(rig);
    const instances = await Promise.all(Array.from({ length: 12 }, () => idleInstance(rig, provider.name)));
    await waitUntilListedRunning(rig, instances.map((i) => i.name));
    const listsBefore = provider.fake.calls('list').length;
    const getsBefore = provider.fake.calls('get').length;
    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });
    expect(report).toMatchObject({ instances: 12, listings: 1, signalled: [], failed: [] });
    expect(provider.fake.calls('list').length - listsBefore).toBe(1);
    expect(provider.fake.calls('get').length - getsBefore).toBe(0);
    await Promise.all(instances.map((i) => i.handle.signal('forceDelete', { reason: 'test done' })));
  });
});

describe('busy runners', () => {
  it('a busy runner whose machine stopped keeps its job through the grace period, then is deleted without waiting on GitHub', async () => {
    const provider = addProvider(rig);
    const { name, handle } = await idleInstance(rig, provider.name);
    await handle.signal(jobStartedSignal, { jobId: 7001 });
    provider.fake.setStatus(name, 'stopped');
    // GitHub still calls the runner busy: the job the dead machine had is not given up yet.
    rig.github.busy.add(name);

    const reportedAt = Date.now();
    await runLiveness(rig, { provider: provider.name, check: 'machines' });
    const during = await eventually(async () => {
      const s = await handle.query(stateQuery);
      return s.health ? s : undefined;
    }, 5_000, 'the finding to be recorded');
    expect(during).toMatchObject({ status: 'running', runnerStatus: 'active', health: { finding: 'machine_stopped' } });

    const final = await handle.result();
    const leaving = final.transitions.find((t) => t.to === 'pending_delete');
    expect(Date.parse(leaving!.at) - reportedAt).toBeGreaterThanOrEqual(LIVENESS_TIMINGS.busyRunnerLostGraceMs);
    expect(leaving?.reason).toBe('machine stopped while running job 7001; still so after the 2 s grace period');
    expect(final).toMatchObject({ status: 'deleted', forced: false, leaked: false });
    // Asked GitHub once, heard "busy", did not wait: the GitHub-side sweep takes the registration later.
    expect(rig.github.calls.filter((c) => c.op === 'remove' && c.name === name).map((c) => c.outcome)).toEqual(['busy']);
    rig.github.busy.delete(name);
  });

  it('a busy runner whose machine comes back within the grace period stays', async () => {
    const provider = addProvider(rig);
    const { name, handle } = await idleInstance(rig, provider.name);
    await handle.signal(jobStartedSignal, { jobId: 7002 });
    provider.fake.setStatus(name, 'stopped');
    await runLiveness(rig, { provider: provider.name, check: 'machines' });
    await eventually(async () => (await handle.query(stateQuery)).health !== undefined, 5_000, 'the finding');
    provider.fake.setStatus(name, 'running');

    const state = await eventually(async () => {
      const s = await handle.query(stateQuery);
      return s.health === undefined ? s : undefined;
    }, 10_000, 'the finding to be dropped after the second look');
    expect(state).toMatchObject({ status: 'running', runnerStatus: 'active', jobId: 7002 });
    expect(provider.fake.calls('get').some((c) => c.instance === `fake-${name}` || c.instance === name)).toBe(true);
    await handle.signal('forceDelete', { reason: 'test done' });
  });

  it('a static runner being deleted while busy does not wait forever once its machine is gone', async () => {
    const provider = addProvider(rig);
    const { name, handle } = await idleInstance(rig, provider.name, { spec: { ephemeral: false } });
    await handle.signal(jobStartedSignal, { jobId: 7003 });
    rig.github.busy.add(name);
    await handle.signal('delete', { reason: 'scale down' });
    await eventually(() => rig.github.count('remove', 'busy') > 0 && rig.github.calls.some((c) => c.name === name && c.outcome === 'busy'), 5_000, 'a busy answer');
    provider.fake.removeInstance(name);
    const final = await handle.result();
    expect(final.status).toBe('deleted');
    rig.github.busy.delete(name);
  });
});

describe('GitHub pass', () => {
  it('catches a provider that says "running" for a runner GitHub sees offline, after a second look', async () => {
    const provider = addProvider(rig);
    const dead = await idleInstance(rig, provider.name);
    const healthy = await idleInstance(rig, provider.name);
    rig.github.runners.get(dead.name)!.status = 'offline';
    const listsBefore = rig.github.count('list');

    const report = await runLiveness(rig, { provider: provider.name, check: 'github' });
    expect(report).toMatchObject({ instances: 2, listings: 1, signalled: [{ name: dead.name, finding: 'runner_offline' }], failed: [] });
    // Both instances share one scope: one listing.
    expect(rig.github.count('list') - listsBefore).toBe(1);
    const final = await dead.handle.result();
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toBe('runner offline (repo:acme/widgets); still so after the 1 s grace period');
    expect((await healthy.handle.query(stateQuery)).status).toBe('running');
    await healthy.handle.signal('forceDelete', { reason: 'test done' });
  });

  it('a busy ephemeral runner asked to leave stops waiting once GitHub no longer lists it, when its completed webhook was lost', async () => {
    const provider = addProvider(rig);
    const done = await idleInstance(rig, provider.name);
    const stillBusy = await idleInstance(rig, provider.name);
    for (const [i, { name, handle }] of [done, stillBusy].entries()) {
      await handle.signal(jobStartedSignal, { jobId: 7100 + i });
      rig.github.busy.add(name);
      await handle.signal('delete', { reason: 'pool deleted' });
    }
    await eventually(() => [done, stillBusy].every(({ name }) => rig.github.calls.some((c) => c.op === 'remove' && c.name === name && c.outcome === 'busy')) || undefined, 5_000, 'busy answers');
    // The job ends and GitHub drops the ephemeral registration, but no webhook says so; the machine stays up.
    rig.github.busy.delete(done.name);
    rig.github.runners.delete(done.name);

    const report = await eventually(async () => {
      const r = await runLiveness(rig, { provider: provider.name, check: 'github' });
      return r.signalled.length > 0 ? r : undefined;
    }, 10_000, 'a GitHub pass that sees the leaving runners');
    expect(report.signalled).toEqual([{ name: done.name, finding: 'runner_missing' }]);
    const final = await done.handle.result();
    expect(final.status).toBe('deleted');
    expect(provider.fake.instance(done.name)).toBeUndefined();
    // The one still busy at GitHub keeps its machine and waits for its job.
    expect((await stillBusy.handle.query(stateQuery)).status).toBe('pending_delete');
    expect(provider.fake.instance(stillBusy.name)).toBeDefined();
    await stillBusy.handle.signal('forceDelete', { reason: 'test done' });
    rig.github.busy.delete(stillBusy.name);
  });

  it('ignores runner findings while the runner has not come online yet (the bootstrap timeout covers that)', async () => {
    const provider = addProvider(rig);
    const name = uniqueName('booting');
    const handle = await startInstance(rig.client, rig.worker.taskQueue, instanceInput(name, { provider: provider.name, timings: LIVENESS_TIMINGS }));
    await waitForStatus(handle, 'running');
    await waitUntilListedRunning(rig, [name]);
    // The pass asks the runner first and does not tell it; a finding that reaches it anyway (a pass
    // racing its own query) is ignored by the runner as well.
    const report = await runLiveness(rig, { provider: provider.name, check: 'github' });
    expect(report.signalled).toEqual([]);
    await handle.signal(healthReportSignal, { finding: 'runner_offline' });
    await new Promise((r) => setTimeout(r, 300));
    const state = await handle.query(stateQuery);
    expect(state).toMatchObject({ status: 'running', runnerStatus: 'pending' });
    expect(state.health).toBeUndefined();
    await handle.signal('forceDelete', { reason: 'test done' });
  });
});

describe('bounded history', () => {
  it('a long-lived runner continues as new, keeping its identity, state and search attributes', async () => {
    const provider = addProvider(rig);
    const { name, handle } = await idleInstance(rig, provider.name, { input: { historyLimit: 40 } });
    const firstRun = (await handle.describe()).runId;
    // Repeated false alarms: each costs the instance a grace timer and a second look.
    for (let i = 0; i < 6; i++) {
      await handle.signal(healthReportSignal, { finding: 'runner_offline' });
      await eventually(async () => (await handle.query(stateQuery)).health === undefined, 5_000, 'the false alarm to clear');
    }
    const described = await eventually(async () => {
      const d = await handle.describe();
      return d.runId !== firstRun ? d : undefined;
    }, 10_000, 'a new run');
    expect(described.status.name).toBe('RUNNING');
    // The passes read the GitHub scope and pool membership from the memo: the new run keeps it.
    expect(described.memo).toMatchObject({ github: { credentials: expect.any(String) } });
    const state = await handle.query(stateQuery);
    expect(state).toMatchObject({ name, status: 'running', runnerStatus: 'idle' });
    expect(state.transitions.map((t) => t.to)).toEqual(['creating', 'running']);
    await waitUntilListedRunning(rig, [name]);

    // The continued run still leaves through the normal path.
    provider.fake.removeInstance(name);
    await runLiveness(rig, { provider: provider.name, check: 'machines' });
    const final = await rig.client.workflow.getHandle<typeof runnerInstance>(handle.workflowId).result();
    expect(final.transitions.map((t) => t.to)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'deleted']);
  });
});
