/**
 * A runner that has not come online yet is offline or unlisted at GitHub by
 * nature; its bootstrap timeout covers it. The GitHub pass asks each pool which
 * of its runners have come online, and tells only those what it found.
 */
import { describe, expect, it } from 'vitest';
import { runnerStatusSignal, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { startInstance, waitForStatus } from '../instance/helpers';
import { poolSettings, startPool } from '../pool/helpers';
import { eventually, instanceInput, uniqueName } from '../support/temporal';
import { addProvider, idleInstance, LIVENESS_TIMINGS, runLiveness, useLivenessRig, waitUntilListedRunning } from './helpers';

const rig = useLivenessRig();

describe('the GitHub pass and a pool’s runners', () => {
  it('tells a runner that came online what GitHub says of it, and leaves one still booting alone', async () => {
    const provider = addProvider(rig);
    const settings = poolSettings({ provider: provider.name, ephemeral: false, minIdleRunners: 2, maxRunners: 2 });
    const pool = await startPool(rig.client, rig.worker.taskQueue, { settings, timings: LIVENESS_TIMINGS });
    try {
      const names = await eventually(async () => {
        const runners = (await pool.query(poolStateQuery)).runners.map((r) => r.name);
        if (runners.length !== 2) return undefined;
        const states = await Promise.all(runners.map((n) => rig.client.workflow.getHandle(runnerWorkflowId(n)).query(stateQuery)));
        return states.every((s) => s.status === 'running') ? runners : undefined;
      }, 20_000, 'two runners with machines');
      const [online, booting] = names as [string, string];
      await rig.client.workflow.getHandle(runnerWorkflowId(online)).signal(runnerStatusSignal, { status: 'idle' });
      await eventually(async () => ((await pool.query(poolStateQuery)).runners.find((r) => r.name === online)?.runnerStatus === 'idle' ? true : undefined), 10_000, 'the pool to hear it came online');
      await waitUntilListedRunning(rig, names);
      // Both registered when their machines were made; the booting one is offline, as any is before its agent starts.
      expect(rig.github.runners.get(booting)?.status).toBe('offline');
      rig.github.runners.delete(online);

      const report = await runLiveness(rig, { provider: provider.name, check: 'github' });
      expect(report).toMatchObject({ instances: 2, signalled: [{ name: online, finding: 'runner_missing' }], failed: [] });
      expect((await rig.client.workflow.getHandle(runnerWorkflowId(booting)).query(stateQuery)).health).toBeUndefined();
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });

  it('asks a runner no pool started how it is, and leaves it alone while it boots', async () => {
    const provider = addProvider(rig);
    const online = await idleInstance(rig, provider.name);
    const bootingName = uniqueName('boot');
    const booting = await startInstance(rig.client, rig.worker.taskQueue, instanceInput(bootingName, { provider: provider.name, timings: LIVENESS_TIMINGS }, { ephemeral: false }));
    await waitForStatus(booting, 'running');
    await waitUntilListedRunning(rig, [online.name, bootingName]);
    expect(rig.github.runners.get(bootingName)?.status).toBe('offline');
    rig.github.runners.delete(online.name);

    const report = await runLiveness(rig, { provider: provider.name, check: 'github' });
    expect(report).toMatchObject({ instances: 2, signalled: [{ name: online.name, finding: 'runner_missing' }], failed: [] });
    expect((await booting.query(stateQuery)).health).toBeUndefined();
  });
});
