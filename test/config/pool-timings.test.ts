/**
 * A new pool's timings: what the config sets, over the defaults. While the liveness passes run,
 * they ask a pool whose glance disagrees with its runners to look for runners that ended
 * unreported, so the pool's own look is a backstop of an hour; without them it stays at ten
 * minutes, the only look there is.
 */
import { describe, expect, it } from 'vitest';
import { poolTimingsOf } from '../../api/pool-settings';
import { parseConfig } from '../../config/load';
import { DEFAULT_TIMINGS } from '../../domain/timings';

describe("a new pool's own look for ended runners", () => {
  it('is an hourly backstop while the liveness passes run', () => {
    expect(poolTimingsOf(parseConfig({})).poolAuditIntervalMs).toBe(60 * 60_000);
  });

  it('stays every ten minutes when the liveness passes are off', () => {
    const timings = poolTimingsOf(parseConfig({ liveness: { enabled: false } }));
    expect(timings.poolAuditIntervalMs).toBe(10 * 60_000);
    expect(timings).toEqual(DEFAULT_TIMINGS);
  });

  it('is what the config says when it says', () => {
    expect(poolTimingsOf(parseConfig({ timings: { poolAuditInterval: '5m' } })).poolAuditIntervalMs).toBe(5 * 60_000);
    expect(poolTimingsOf(parseConfig({ timings: { poolAuditInterval: '5m' }, liveness: { enabled: false } })).poolAuditIntervalMs).toBe(5 * 60_000);
  });

  it('takes the interval at which the machine pass asks again from the config', () => {
    expect(parseConfig({}).liveness.poolAskInterval).toBe(10 * 60_000);
    expect(parseConfig({ liveness: { poolAskInterval: '30m' } }).liveness.poolAskInterval).toBe(30 * 60_000);
  });
});
