import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../config/load';
import { ensureSweepSchedules, sweepScheduleId } from '../../worker/sweep-schedule';
import { awayFromTheHour } from '../support/temporal';
import { addProvider, leakMachine, runSweep, triggerSweep, useSweepRig } from './helpers';

const HOUR = 3_600_000;

const rig = useSweepRig();

describe('machines a forced delete leaked', () => {
  it('are kept through the grace period, then deleted once the provider answers again', async () => {
    const provider = addProvider(rig);
    const name = await leakMachine(rig, provider);

    const early = await runSweep(rig, provider.name, HOUR);
    expect(early).toMatchObject({ provider: provider.name, listed: 1, owned: 0, deleted: [], failed: [] });
    expect(early.skipped).toEqual([{ name, reason: expect.stringMatching(/^leaked for \d+ s, inside the 3600 s grace period$/) }]);
    expect(provider.fake.instance(name)).toBeDefined();

    rig.clockOffset.ms = HOUR + 60_000;
    const late = await runSweep(rig, provider.name, HOUR);
    expect(late).toEqual({ provider: provider.name, listed: 1, owned: 0, deleted: [{ name, providerId: `fake-${name}`, reason: 'leaked' }], skipped: [], failed: [] });
    expect(provider.fake.instance(name)).toBeUndefined();
    expect(provider.fake.calls('delete').at(-1)).toMatchObject({ instance: `fake-${name}`, outcome: 'deleted', controllerId: 'test-controller' });
  });

  it('are deleted by a run of the provider sweep schedule', async () => {
    const provider = addProvider(rig);
    const name = await leakMachine(rig, provider);
    // A long interval: the run under test is the triggered one, not a scheduled one.
    const config = parseConfig({ providers: [{ type: 'fake', name: provider.name, stateDir: provider.stateDir }], sweep: { interval: '24h', gracePeriod: 0 } });
    await awayFromTheHour();
    await ensureSweepSchedules(rig.client, config, rig.worker.taskQueue);
    const schedule = rig.client.schedule.getHandle(sweepScheduleId(provider.name));
    try {
      const report = await triggerSweep(rig.client, schedule);
      expect(report.deleted).toEqual([{ name, providerId: `fake-${name}`, reason: 'leaked' }]);
      expect(report.failed).toEqual([]);
      expect(provider.fake.instance(name)).toBeUndefined();
    } finally {
      await schedule.delete();
    }
  });
});
