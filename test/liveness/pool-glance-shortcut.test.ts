/**
 * A liveness pass asks each pool of the runners it listed which of them it counts (machine
 * pass) or has heard come online (GitHub pass). A pool whose glance names exactly the listed
 * runners as online has already said both, so it is not asked: with hundreds of pools, those
 * queries kept a worker replaying pools it could not hold in its cache.
 */
import { describe, expect, it } from 'vitest';
import { PoolDirectory } from '../../api/pool-directory';
import { deletePoolSignal, poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { runnerPool } from '../../workflows/runner-pool';
import { autoRegister, idleRunners, poolSettings } from '../pool/helpers';
import { eventually } from '../support/temporal';
import { addProvider, LIVENESS_TIMINGS, runLiveness, useLivenessRig, waitUntilListedRunning } from './helpers';

const rig = useLivenessRig();

describe('a pool whose glance names its runners', () => {
  it('is not asked by either pass, and a finding still reaches its runner', async () => {
    const provider = addProvider(rig);
    const settings = poolSettings({ provider: provider.name, ephemeral: false, minIdleRunners: 2, maxRunners: 2 });
    // With the memo the API starts a pool with: the passes read glances of pools it names.
    const pool = await rig.client.workflow.start(runnerPool, {
      taskQueue: rig.worker.taskQueue,
      workflowId: poolWorkflowId(settings.name),
      args: [{ settings, timings: { ...LIVENESS_TIMINGS, poolGlanceIntervalMs: 0 } }],
      memo: { ...poolMemoOf(settings) },
    });
    const agents = autoRegister(rig.client, pool);
    try {
      // The passes read glances from visibility, which lags the pool's own memo.
      const directory = new PoolDirectory(rig.client, 0);
      const names = await eventually(async () => {
        const glance = (await directory.fetch()).find((entry) => entry.name === settings.name)?.memo?.glance;
        const idle = idleRunners(await pool.query(poolStateQuery));
        return glance?.online?.count === 2 && idle.length === 2 ? idle : undefined;
      }, 20_000, 'visibility to list a glance of two runners online');
      await waitUntilListedRunning(rig, names);
      for (const name of names) {
        const registration = rig.github.runners.get(name);
        if (registration) registration.status = 'online';
      }

      const machines = await runLiveness(rig, { provider: provider.name, check: 'machines' });
      expect(machines).toMatchObject({ instances: 2, signalled: [], orphaned: [], uncounted: [], failed: [], poolsAtGlance: 1 });
      expect(machines.poolsAsked).toBeUndefined();

      // The GitHub pass takes both runners for online without asking, so a registration gone is news to it.
      const [gone] = names as [string, string];
      rig.github.runners.delete(gone);
      const github = await runLiveness(rig, { provider: provider.name, check: 'github' });
      expect(github).toMatchObject({ instances: 2, signalled: [{ name: gone, finding: 'runner_missing' }], failed: [], poolsAtGlance: 1 });
      expect(github.poolsAsked).toBeUndefined();
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});
