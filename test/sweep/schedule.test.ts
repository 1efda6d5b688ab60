import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../config/load';
import { ensureSweepSchedules, sweepScheduleId } from '../../worker/sweep-schedule';
import { uniqueName, useScheduleClient } from '../support/temporal';

const schedules = useScheduleClient();

function configFor(providers: string[], sweep: Record<string, unknown>) {
  return parseConfig({ providers: providers.map((name) => ({ type: 'fake', name, stateDir: `/tmp/${name}` })), sweep });
}

describe('ensureSweepSchedules', () => {
  it('creates one schedule per provider with the configured interval and grace period, and is idempotent', async () => {
    const providers = [uniqueName('sched-a'), uniqueName('sched-b')];
    schedules.created.push(...providers.map(sweepScheduleId));
    const config = configFor(providers, { interval: '7m', gracePeriod: '15m' });

    expect(await ensureSweepSchedules(schedules.client, config, 'sweep-tq')).toEqual(providers.map((p) => ({ provider: p, scheduleId: `sweep/${p}`, change: 'created' })));
    for (const provider of providers) {
      const desc = await schedules.client.schedule.getHandle(`sweep/${provider}`).describe();
      expect(desc.spec.intervals?.map((i) => i.every)).toEqual([7 * 60_000]);
      expect(desc.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
      expect(desc.action).toMatchObject({ type: 'startWorkflow', workflowType: 'providerSweep', workflowId: `sweep/${provider}`, taskQueue: 'sweep-tq' });
      expect(desc.action.args).toEqual([{ provider, gracePeriodMs: 15 * 60_000, intervalMs: 7 * 60_000, githubRunners: true, lostJobAgeMs: 2 * 60_000, lostJobRepositories: 20, lostJobRound: 5 }]);
    }

    expect((await ensureSweepSchedules(schedules.client, config, 'sweep-tq')).map((r) => r.change)).toEqual(['unchanged', 'unchanged']);
  });

  it('updates a schedule whose interval or grace period changed', async () => {
    const provider = uniqueName('sched-change');
    schedules.created.push(sweepScheduleId(provider));
    await ensureSweepSchedules(schedules.client, configFor([provider], { interval: '5m', gracePeriod: '10m' }), 'sweep-tq');

    const changed = configFor([provider], { interval: '2m', gracePeriod: '30m' });
    expect(await ensureSweepSchedules(schedules.client, changed, 'sweep-tq')).toEqual([{ provider, scheduleId: `sweep/${provider}`, change: 'updated' }]);
    const desc = await schedules.client.schedule.getHandle(sweepScheduleId(provider)).describe();
    expect(desc.spec.intervals?.map((i) => i.every)).toEqual([2 * 60_000]);
    expect(desc.action.args).toEqual([{ provider, gracePeriodMs: 30 * 60_000, intervalMs: 2 * 60_000, githubRunners: true, lostJobAgeMs: 2 * 60_000, lostJobRepositories: 20, lostJobRound: 5 }]);
    expect(desc.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
    expect((await ensureSweepSchedules(schedules.client, changed, 'sweep-tq'))[0]?.change).toBe('unchanged');
  });

  it('creates nothing when the sweep is disabled', async () => {
    const provider = uniqueName('sched-off');
    expect(await ensureSweepSchedules(schedules.client, configFor([provider], { enabled: false }), 'sweep-tq')).toEqual([]);
    await expect(schedules.client.schedule.getHandle(sweepScheduleId(provider)).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  });

  it('pauses existing schedules when the sweep is disabled, and resumes them when it is enabled again', async () => {
    const provider = uniqueName('sched-pause');
    schedules.created.push(sweepScheduleId(provider));
    const on = configFor([provider], { interval: '5m' });
    await ensureSweepSchedules(schedules.client, on, 'sweep-tq');
    expect(await ensureSweepSchedules(schedules.client, configFor([provider], { enabled: false }), 'sweep-tq')).toEqual([
      { provider, scheduleId: `sweep/${provider}`, change: 'paused' },
    ]);
    const paused = await schedules.client.schedule.getHandle(sweepScheduleId(provider)).describe();
    expect(paused.state.paused).toBe(true);
    expect(paused.state.note).toBe('sweep disabled in the config');
    expect(await ensureSweepSchedules(schedules.client, configFor([provider], { enabled: false }), 'sweep-tq')).toEqual([]);
    expect((await ensureSweepSchedules(schedules.client, on, 'sweep-tq'))[0]?.change).toBe('updated');
    expect((await schedules.client.schedule.getHandle(sweepScheduleId(provider)).describe()).state.paused).toBe(false);
  });
});
