/**
 * A pool writes its counts into its memo (its glance) for readers that must not query every
 * pool: after a decision that changed them, at most every `poolGlanceInterval`, the last change
 * of a burst included, and nothing while it is quiet.
 */
import { describe, expect, it } from 'vitest';
import { countRunners } from '../../domain/pool-counts';
import { nameSetDigest } from '../../domain/name-set-digest';
import { deletePoolSignal, jobQueuedSignal, poolStateQuery, queuedJobCount, type PoolGlance } from '../../workflows/pool-messages';
import { eventually, FAST_TIMINGS, useTestWorker } from '../support/temporal';
import { autoRegister, isGlanceTimer, poolSettings, startPool } from './helpers';

const env = useTestWorker();
const GLANCE_INTERVAL_MS = 1_500;

describe('a pool\'s glance', () => {
  it('is written when its counts change, the last change of a burst once the interval is over, and not while it is quiet', async () => {
    const settings = poolSettings({ minIdleRunners: 2, maxRunners: 2 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, timings: { ...FAST_TIMINGS, poolGlanceIntervalMs: GLANCE_INTERVAL_MS } });
    const agents = autoRegister(env.client, pool);
    const glance = async () => ((await pool.describe()).memo?.glance as PoolGlance | undefined) ?? undefined;
    try {
      // Two idle runners: the glance says what the pool's own view says.
      const idle = await eventually(async () => {
        const g = await glance();
        return g?.counts.idle === 2 ? g : undefined;
      }, 20_000, 'a glance of two idle runners');
      const view = await pool.query(poolStateQuery);
      expect(idle).toMatchObject({ counts: countRunners(view.runners), statuses: { running: 2 }, agents: { idle: 2 }, queuedJobs: 0, desired: 2, minIdleRunners: 2 });
      // And which runners came online, as a digest of their names, in any order.
      const names = view.runners.map((r) => r.name);
      expect(idle.online).toEqual(nameSetDigest([...names].reverse()));
      expect(idle.online).not.toEqual(nameSetDigest(names.slice(1)));

      // A burst of jobs within one interval: the first change may be written at once, the last
      // only when the interval is over, by the glance's own timer.
      const queuedAt = new Date().toISOString();
      for (let i = 0; i < 3; i++) await pool.signal(jobQueuedSignal, { jobId: 7_100 + i, labels: ['self-hosted', 'linux', 'nomatch'], queuedAt });
      const burst = await eventually(async () => {
        const [g, v] = await Promise.all([glance(), pool.query(poolStateQuery)]);
        return g && g.queuedJobs === queuedJobCount(v) && queuedJobCount(v) > 0 ? g : undefined;
      }, 20_000, 'the glance to count every job of the burst');
      expect(burst.at).toBeGreaterThan(idle.at);

      // Quiet: nothing changes, so nothing is written.
      const { events: before } = await pool.fetchHistory();
      const written = (events: typeof before) => (events ?? []).filter((e) => e.workflowPropertiesModifiedEventAttributes).length;
      await new Promise((r) => setTimeout(r, GLANCE_INTERVAL_MS * 2));
      const { events: after } = await pool.fetchHistory();
      expect(written(after)).toBe(written(before));
      expect((await glance())?.at).toBe(burst.at);
      // The burst's later jobs were held back, and a glance timer wrote them: at least one, and never more than writes.
      const glanceTimers = (after ?? []).filter(isGlanceTimer).length;
      expect(glanceTimers).toBeGreaterThanOrEqual(1);
      expect(glanceTimers).toBeLessThanOrEqual(written(after));
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});
