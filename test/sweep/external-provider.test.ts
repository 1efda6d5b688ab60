/**
 * The sweep against a GARM external provider executable, which refuses to list
 * without a pool (and, in v0.1.1, to delete without one): the sweep lists the pools
 * a machine could have been left in, and deletes naming the pool it was listed under.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PoolDirectory } from '../../api/pool-directory';
import { poolSettingsSchema } from '../../domain/pool';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';
import { forceDeleteSignal } from '../../workflows/messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { poolWorkflowId } from '../../workflows/pool-messages';
import { startInstance, waitForStatus } from '../instance/helpers';
import { bootstrapFor } from '../providers/bootstrap';
import { externalProviderOnScript, type ExternalScriptFixture } from '../providers/support/external-script';
import { eventually, instanceInput, uniqueName } from '../support/temporal';
import { CONTROLLER, runSweep, useSweepRig, waitUntilListed } from './helpers';

const rig = useSweepRig();
const scripts: ExternalScriptFixture[] = [];
afterAll(() => scripts.forEach((s) => s.remove()));

describe.each(['v0.1.0', 'v0.1.1'] as const)('sweep of an external provider %s', (interfaceVersion) => {
  it('lists the pools of running, unclean and leaked runners and of running pools, and deletes with the pool', async () => {
    const name = uniqueName(`garm-${interfaceVersion.replaceAll('.', '')}`);
    const { provider, script } = externalProviderOnScript(name, interfaceVersion);
    scripts.push(script);
    rig.providers.set(name, provider);
    const [ownedPool, orphanPool, leakPool, quietPool] = ['owned', 'orphan', 'leak', 'quiet'].map((p) => uniqueName(`garm-${p}`)) as [string, string, string, string];
    const start = async (pool: string) => {
      const handle = await startInstance(rig.client, rig.worker.taskQueue, instanceInput(uniqueName(pool), { provider: name, pool }));
      await waitForStatus(handle, 'running');
      return { handle, name: handle.workflowId.slice('runner/'.length) };
    };

    const owned = await start(ownedPool);

    // Terminated: no clean-up runs, the machine stays behind in a pool no running runner uses.
    const orphan = await start(orphanPool);
    await orphan.handle.terminate('operator terminated the workflow');

    // A forced delete the provider refuses: the runner completes marked leaked; its clean-up is
    // terminated so that the machine is left to the sweep.
    const leaked = await start(leakPool);
    script.setBehaviour('DeleteInstance', { exit: 1, stderr: 'provider credentials expired' });
    await leaked.handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
    expect(await leaked.handle.result()).toMatchObject({ leaked: true });
    await rig.client.workflow.getHandle(cleanupWorkflowId(leaked.name)).terminate('leaving the machine to the sweep');
    // A delete attempt dispatched just before the termination may still run: once the provider
    // answers again it would take the machine the sweep is to find. A second without one: none is left.
    await eventually(async () => {
      const before = script.calls('DeleteInstance').length;
      await new Promise((r) => setTimeout(r, 1_000));
      return script.calls('DeleteInstance').length === before ? true : undefined;
    }, 20_000, `the last delete attempt on ${leaked.name} to end`);
    script.clearBehaviours();
    expect(await provider.getInstance(leaked.name, { controllerId: CONTROLLER, poolId: leakPool })).toMatchObject({ name: leaked.name });

    // A running pool of this provider, with a machine no workflow knew.
    const settings = poolSettingsSchema.parse({
      name: quietPool,
      github: { credentials: 'default', scope: { kind: 'repo', owner: 'octo', repo: 'app' } },
      labels: ['self-hosted', 'quiet'],
      provider: name,
    });
    const pool = await rig.client.workflow.start('runnerPool', { taskQueue: uniqueName('tq-nobody'), workflowId: poolWorkflowId(quietPool), args: [], memo: { ...poolMemoOf(settings) } });
    const stray = uniqueName('stray');
    await provider.createInstance(bootstrapFor(stray, quietPool), { controllerId: CONTROLLER, poolId: quietPool });

    try {
      await waitUntilListed(rig, orphan.name, `ExecutionStatus = 'Terminated'`);
      await waitUntilListed(rig, leaked.name, `ExecutionStatus != 'Running' AND RunnerLeaked = true`);
      await waitUntilListed(rig, owned.name, `ExecutionStatus = 'Running'`);
      const directory = new PoolDirectory(rig.client, 0);
      await eventually(async () => (await directory.fetch()).some((p) => p.name === quietPool && p.memo), 20_000, 'the pool to be listed with its memo');
      const deletesBefore = script.calls('DeleteInstance').length;
      const listsBefore = script.calls('ListInstances').length;

      const report = await runSweep(rig, name, 0);
      expect(report).toMatchObject({ provider: name, listed: 4, owned: 1, failed: [] });
      expect(report.deleted.sort((a, b) => a.name.localeCompare(b.name))).toEqual(
        [
          { name: orphan.name, providerId: `ext-${orphan.name}`, reason: 'orphaned' },
          { name: leaked.name, providerId: `ext-${leaked.name}`, reason: 'leaked' },
        ].sort((a, b) => a.name.localeCompare(b.name)),
      );
      // The provider reports no creation time: a machine no workflow knew cannot be dated.
      expect(report.skipped).toEqual([{ name: stray, reason: 'no workflow knew it and the provider reports no creation time' }]);
      expect(script.calls('ListInstances').slice(listsBefore).map((c) => c.env.GARM_POOL_ID).sort()).toEqual([ownedPool, orphanPool, leakPool, quietPool].sort());

      const deletes = script.calls('DeleteInstance').slice(deletesBefore);
      const poolOf = (machine: string) => deletes.find((c) => c.env.GARM_INSTANCE_ID === `ext-${machine}`)?.env.GARM_POOL_ID;
      // v0.1.0 tells DeleteInstance no pool at all; v0.1.1 must, or the executable refuses.
      expect([poolOf(orphan.name), poolOf(leaked.name)]).toEqual(interfaceVersion === 'v0.1.1' ? [orphanPool, leakPool] : [undefined, undefined]);
      expect(deletes).toHaveLength(2);
      expect((await provider.listInstances({ controllerId: CONTROLLER, poolId: orphanPool })).map((m) => m.name)).toEqual([]);
      expect((await provider.listInstances({ controllerId: CONTROLLER, poolId: leakPool })).map((m) => m.name)).toEqual([]);
    } finally {
      await pool.terminate('test done');
      await owned.handle.signal(forceDeleteSignal, { reason: 'test done' });
      await owned.handle.result();
      await provider.deleteInstance(stray, { controllerId: CONTROLLER, poolId: quietPool });
    }
  });
});
