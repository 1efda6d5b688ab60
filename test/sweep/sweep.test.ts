import { TypedSearchAttributes } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { sweepDeleted } from '../../observability/metrics';
import { FakeProvider } from '../../providers/fake';
import type { ProviderCallContext, ProviderInstance } from '../../providers/port';
import { instanceStartOptions } from '../../workflows/instance-options';
import { forceDeleteSignal } from '../../workflows/messages';
import { runnerInstance } from '../../workflows/runner-instance';
import { RUNNER_NAME } from '../../workflows/search-attributes';
import { waitForStatus } from '../instance/helpers';
import { instanceInput, uniqueName } from '../support/temporal';
import { addProvider, CONTROLLER, runningInstance, runSweep, useSweepRig, waitUntilListed } from './helpers';

const HOUR = 3_600_000;
const hoursAgo = (h: number) => Date.now() - h * HOUR;

const rig = useSweepRig();

async function deletedCount(provider: string, reason: string): Promise<number> {
  const metric = await sweepDeleted.get();
  return metric.values.find((v) => v.labels.provider === provider && v.labels.reason === reason)?.value ?? 0;
}

/** A provider that cannot say when its machines were made. */
class UndatedFakeProvider extends FakeProvider {
  override async listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    return (await super.listInstances(ctx)).map(({ createdAt: _createdAt, ...rest }) => rest);
  }
}

describe('ownership', () => {
  it('never deletes a machine whose runner workflow is running', async () => {
    const provider = addProvider(rig);
    const handle = await runningInstance(rig, provider.name);
    const name = handle.workflowId.slice('runner/'.length);
    await waitUntilListed(rig, name, `ExecutionStatus = 'Running'`);

    const report = await runSweep(rig, provider.name, 0);
    expect(report).toEqual({ provider: provider.name, listed: 1, owned: 1, deleted: [], skipped: [], failed: [] });
    expect(provider.fake.instance(name)).toBeDefined();
    expect(provider.fake.calls('delete')).toEqual([]);
    await handle.signal(forceDeleteSignal, { reason: 'test done' });
    await handle.result();
  });

  it('asks the runner workflow itself before deleting, so a runner visibility does not list is safe', async () => {
    const provider = addProvider(rig);
    const name = uniqueName('unlisted');
    const options = instanceStartOptions(instanceInput(name, { provider: provider.name }));
    // Without RunnerProvider the sweep's visibility query cannot see this runner, as when visibility lags.
    const handle = await rig.client.workflow.start(runnerInstance, {
      taskQueue: rig.worker.taskQueue,
      ...options,
      typedSearchAttributes: new TypedSearchAttributes([{ key: RUNNER_NAME, value: name }]),
    });
    await waitForStatus(handle, 'running');

    const report = await runSweep(rig, provider.name, 0);
    expect(report).toEqual({ provider: provider.name, listed: 1, owned: 1, deleted: [], skipped: [], failed: [] });
    expect(provider.fake.instance(name)).toBeDefined();
    await handle.signal(forceDeleteSignal, { reason: 'test done' });
    await handle.result();
  });

  it('deletes a machine whose workflow ended without deleting it, as orphaned', async () => {
    const provider = addProvider(rig);
    const handle = await runningInstance(rig, provider.name);
    const name = handle.workflowId.slice('runner/'.length);
    // Terminating skips every cleanup step: the machine stays behind.
    await handle.terminate('operator terminated the workflow');
    await waitUntilListed(rig, name, `ExecutionStatus != 'Running'`);

    const report = await runSweep(rig, provider.name, 0);
    expect(report.deleted).toEqual([{ name, providerId: `fake-${name}`, reason: 'orphaned' }]);
    expect(provider.fake.instance(name)).toBeUndefined();
    expect(await deletedCount(provider.name, 'orphaned')).toBe(1);
  });
});

describe('orphaned machines whose runner is busy', () => {
  it('are left to finish their job, and deleted by a later sweep once GitHub no longer calls them busy', async () => {
    const provider = addProvider(rig);
    const handle = await runningInstance(rig, provider.name);
    const name = handle.workflowId.slice('runner/'.length);
    // The machine runs a job when an operator terminates its runner's workflow.
    rig.github.busy.add(name);
    await handle.terminate('operator terminated the workflow');
    await waitUntilListed(rig, name, `ExecutionStatus != 'Running'`);

    const busy = await runSweep(rig, provider.name, 0);
    expect(busy.deleted).toEqual([]);
    expect(busy.skipped).toEqual([{ name, reason: 'its runner is busy at GitHub (repo:acme/widgets): deleted once its job is done' }]);
    expect(provider.fake.instance(name)).toBeDefined();

    // GitHub cannot answer: nothing is known, so nothing is deleted.
    rig.github.setFault('find', { failTimes: 1 });
    const unknown = await runSweep(rig, provider.name, 0);
    expect(unknown.skipped).toEqual([{ name, reason: expect.stringMatching(/^GitHub could not say whether its runner is busy: /) }]);
    expect(provider.fake.instance(name)).toBeDefined();

    rig.github.busy.delete(name);
    const done = await runSweep(rig, provider.name, 0);
    expect(done.deleted).toEqual([{ name, providerId: `fake-${name}`, reason: 'orphaned' }]);
    expect(provider.fake.instance(name)).toBeUndefined();
  });
});

describe('machines no workflow knew', () => {
  it('are skipped inside the grace period and deleted after it, by the creation time the provider reports', async () => {
    const provider = addProvider(rig);
    const young = provider.fake.addInstance({ name: uniqueName('young'), controllerId: CONTROLLER, createdAt: hoursAgo(0.5) });
    const old = provider.fake.addInstance({ name: uniqueName('old'), controllerId: CONTROLLER, createdAt: hoursAgo(2), poolId: 'gone-pool' });

    const report = await runSweep(rig, provider.name, HOUR);
    expect(report).toMatchObject({ listed: 2, owned: 0, failed: [] });
    expect(report.deleted).toEqual([{ name: old.name, providerId: old.providerId, reason: 'untracked' }]);
    expect(report.skipped).toEqual([{ name: young.name, reason: expect.stringMatching(/^untracked for 1800 s, inside the 3600 s grace period$/) }]);
    expect(provider.fake.instances().map((m) => m.name)).toEqual([young.name]);
    expect(provider.fake.calls('delete')).toMatchObject([{ instance: old.providerId, outcome: 'deleted', poolId: 'gone-pool' }]);
    expect(await deletedCount(provider.name, 'untracked')).toBe(1);
  });

  it('are skipped when the provider reports no creation time', async () => {
    const provider = addProvider(rig, UndatedFakeProvider);
    const machine = provider.fake.addInstance({ name: uniqueName('undated'), controllerId: CONTROLLER, createdAt: hoursAgo(48) });
    const report = await runSweep(rig, provider.name, 0);
    expect(report).toEqual({
      provider: provider.name,
      listed: 1,
      owned: 0,
      deleted: [],
      skipped: [{ name: machine.name, reason: 'no workflow knew it and the provider reports no creation time' }],
      failed: [],
    });
    expect(provider.fake.instance(machine.name)).toBeDefined();
  });

  it('of another controller are neither listed nor touched', async () => {
    const provider = addProvider(rig);
    const theirs = provider.fake.addInstance({ name: uniqueName('theirs'), controllerId: 'other-controller', createdAt: hoursAgo(48) });
    const ours = provider.fake.addInstance({ name: uniqueName('ours'), controllerId: CONTROLLER, createdAt: hoursAgo(48) });
    const report = await runSweep(rig, provider.name, HOUR);
    expect(report).toMatchObject({ listed: 1, deleted: [{ name: ours.name, reason: 'untracked' }], skipped: [], failed: [] });
    expect(provider.fake.instance(theirs.name)).toBeDefined();
    expect(provider.fake.calls('delete').map((c) => c.instance)).toEqual([ours.providerId]);
  });
});

describe('provider errors', () => {
  it('a failing delete lands in failed and the other machines are still swept', async () => {
    const provider = addProvider(rig);
    const [first, stuck, last] = ['a', 'b', 'c'].map((p) => provider.fake.addInstance({ name: uniqueName(`orphan-${p}`), controllerId: CONTROLLER, createdAt: hoursAgo(3) }));
    provider.fake.setFault('delete', { failForever: true, instance: stuck!.name, message: 'instance is protected' });

    const report = await runSweep(rig, provider.name, HOUR);
    expect(report.failed).toEqual([{ name: stuck!.name, error: 'instance is protected' }]);
    expect(report.deleted.map((d) => d.name).sort()).toEqual([first!.name, last!.name].sort());
    expect(provider.fake.instances().map((m) => m.name)).toEqual([stuck!.name]);

    // Once the provider deletes again, the next run takes it.
    provider.fake.clearFaults('delete');
    const next = await runSweep(rig, provider.name, HOUR);
    expect(next).toMatchObject({ listed: 1, deleted: [{ name: stuck!.name, reason: 'untracked' }], failed: [] });
    expect(provider.fake.instances()).toEqual([]);
  });
});
