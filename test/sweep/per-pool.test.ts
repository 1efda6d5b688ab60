/**
 * The sweep of a provider that lists only within a pool: which closed runners' pools it
 * lists, and that it reads no more of visibility than that takes.
 */
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { describe, expect, it, vi } from 'vitest';
import { FakeProvider } from '../../providers/fake';
import type { ProviderCallContext } from '../../providers/port';
import { cleanupWorkflowId, MACHINE_CLEANUP_WORKFLOW } from '../../workflows/cleanup-messages';
import { deleteSignal, forceDeleteSignal, RUNNER_INSTANCE_WORKFLOW, runnerStatusSignal } from '../../workflows/messages';
import { startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, uniqueName } from '../support/temporal';
import { addProvider, runSweep, useSweepRig, waitUntilListed, type SweepRig } from './helpers';

const HOUR = 3_600_000;

const rig = useSweepRig();

/** Lists per pool, as GARM's external executables do; while `keepsDeleted` is set it answers every delete as done and keeps the machine. */
class PerPoolProvider extends FakeProvider {
  readonly listsPerPool = true;
  static keepsDeleted = false;

  override async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    if (PerPoolProvider.keepsDeleted) return;
    return super.deleteInstance(instanceId, ctx);
  }
}

async function startIn(provider: string, pool: string, overrides: { historyLimit?: number } = {}) {
  const name = uniqueName('per-pool');
  const handle = await startInstance(rig.client, rig.worker.taskQueue, instanceInput(name, { provider, pool, ...overrides }));
  await waitForStatus(handle, 'running');
  return { name, handle };
}

/** Every runner and clean-up workflow the sweep's visibility listings hand back while `run` runs. */
async function readsDuring<T>(r: SweepRig, run: () => Promise<T>): Promise<{ result: T; read: { workflowId: string; status: string }[] }> {
  const list = r.client.workflow.list.bind(r.client.workflow);
  const read: { workflowId: string; status: string }[] = [];
  const spy = vi.spyOn(r.client.workflow, 'list').mockImplementation((options) => {
    const listing = list(options);
    return {
      ...listing,
      async *[Symbol.asyncIterator](): AsyncIterator<WorkflowExecutionInfo> {
        for await (const info of listing) {
          if (info.type === RUNNER_INSTANCE_WORKFLOW || info.type === MACHINE_CLEANUP_WORKFLOW) read.push({ workflowId: info.workflowId, status: info.status.name });
          yield info;
        }
      },
    };
  });
  try {
    return { result: await run(), read };
  } finally {
    spy.mockRestore();
  }
}

describe('sweep of a provider that lists per pool', () => {
  it('deletes a machine a runner left though the provider answered its delete as done, after its pool is gone', async () => {
    const provider = addProvider(rig, PerPoolProvider);
    // No pool workflow: the pool is gone, only the runner's own record names it.
    const pool = uniqueName('gone-pool');
    const { name, handle } = await startIn(provider.name, pool);
    PerPoolProvider.keepsDeleted = true;
    try {
      await handle.signal(deleteSignal, { reason: 'pool deleted' });
      expect(await handle.result()).toMatchObject({ status: 'deleted', leaked: false });
    } finally {
      PerPoolProvider.keepsDeleted = false;
    }
    expect(provider.fake.instance(name)).toBeDefined();
    await waitUntilListed(rig, name, `ExecutionStatus = 'Completed'`);

    const early = await runSweep(rig, provider.name, HOUR);
    expect(early).toMatchObject({ listed: 1, owned: 0, deleted: [], failed: [] });
    expect(early.skipped).toEqual([{ name, reason: expect.stringMatching(/^orphaned for \d+ s, inside the 3600 s grace period$/) }]);

    rig.clockOffset.ms = HOUR + 60_000;
    const late = await runSweep(rig, provider.name, HOUR);
    expect(late).toEqual({ provider: provider.name, listed: 1, owned: 0, deleted: [{ name, providerId: `fake-${name}`, reason: 'orphaned' }], skipped: [], failed: [] });
    expect(provider.fake.instance(name)).toBeUndefined();
    expect(provider.fake.calls('list').map((c) => c.poolId)).toEqual([pool, pool]);
  });

  it('reads no earlier run of a runner that continued as new and no runner closed long ago, yet lists a pool a clean-up still works on', async () => {
    const provider = addProvider(rig, PerPoolProvider);
    const [livePool, oldPool, leakPool] = ['live', 'old', 'leak'].map((p) => uniqueName(`${p}-pool`)) as [string, string, string];

    // A long-lived runner: repeated idle reports grow its history until it continues as new.
    const live = await startIn(provider.name, livePool, { historyLimit: 40 });
    const firstRunId = (await live.handle.describe()).runId;
    await eventually(async () => {
      await live.handle.signal(runnerStatusSignal, { status: 'idle' });
      return (await live.handle.describe()).runId !== firstRunId ? true : undefined;
    }, 20_000, 'a continued run');

    // Terminated: its machine stays behind, for longer than the sweep looks back.
    const old = await startIn(provider.name, oldPool);
    await old.handle.terminate('operator terminated the workflow');

    // A forced delete the provider refuses: the clean-up goes on retrying.
    const leaked = await startIn(provider.name, leakPool);
    provider.fake.setFault('delete', { failForever: true, instance: leaked.name, message: 'provider credentials expired' });
    await leaked.handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
    expect(await leaked.handle.result()).toMatchObject({ leaked: true });

    try {
      await waitUntilListed(rig, live.name, `ExecutionStatus = 'ContinuedAsNew'`);
      await waitUntilListed(rig, old.name, `ExecutionStatus = 'Terminated'`);
      await waitUntilListed(rig, leaked.name, `ExecutionStatus = 'Completed' AND RunnerLeaked = true`);
      await eventually(async () => {
        for await (const info of rig.client.workflow.list({ query: `WorkflowType = '${MACHINE_CLEANUP_WORKFLOW}' AND RunnerName = '${leaked.name}' AND ExecutionStatus = 'Running' AND RunnerLeaked = true` })) {
          if (info.workflowId === cleanupWorkflowId(leaked.name)) return true;
        }
        return undefined;
      }, 20_000, 'visibility to list the running clean-up');

      const now = await readsDuring(rig, () => runSweep(rig, provider.name, HOUR));
      expect(now.read.filter((r) => r.status === 'CONTINUED_AS_NEW')).toEqual([]);
      expect(now.result).toMatchObject({ listed: 3, owned: 1, deleted: [], failed: [] });
      expect(now.result.skipped.map((s) => s.name).sort()).toEqual([old.name, leaked.name].sort());

      rig.clockOffset.ms = 24 * HOUR;
      const listsBefore = provider.fake.calls('list').length;
      const later = await readsDuring(rig, () => runSweep(rig, provider.name, HOUR));
      expect(later.read.filter((r) => r.status === 'CONTINUED_AS_NEW' || r.workflowId === old.handle.workflowId)).toEqual([]);
      expect(provider.fake.calls('list').slice(listsBefore).map((c) => c.poolId).sort()).toEqual([livePool, leakPool].sort());
      // Still refused: found and tried, and left to the next sweep and the clean-up.
      expect(later.result).toMatchObject({ listed: 2, owned: 1, deleted: [], skipped: [], failed: [{ name: leaked.name, error: 'provider credentials expired' }] });
    } finally {
      provider.fake.clearFaults('delete');
      await live.handle.signal(forceDeleteSignal, { reason: 'test done' });
      await live.handle.result();
      await rig.client.workflow.getHandle(cleanupWorkflowId(leaked.name)).result();
    }
  });
});
