/**
 * The sweep's look for lost jobs of an organisation pool starts with the repositories the pool
 * has lately had jobs from, which only the pool knows. It asks the pool once, and again only
 * when the digest of that list in the pool's glance has changed: every sweep asking every
 * organisation pool kept a worker replaying pools it could not hold in its cache.
 */
import { describe, expect, it } from 'vitest';
import { createGitHubSweepActivities, type GitHubSweepArgs } from '../../activities/github-sweep-activities';
import { deletePoolSignal, recentRepositoriesQuery } from '../../workflows/pool-messages';
import { poolHearingRepositories, poolSettings } from '../pool/helpers';
import { queryCountingClient } from '../support/counting-client';
import { GitHubDouble } from '../support/github-double';
import { uniqueName, useTestWorker } from '../support/temporal';

const env = useTestWorker();

describe('an organisation pool’s recent repositories', () => {
  it('are asked for once, and again only when the pool’s glance shows they changed', async () => {
    const org = uniqueName('recent-org').toLowerCase().slice(0, 30);
    const settings = poolSettings({ provider: uniqueName('recent-provider'), minIdleRunners: 0, maxRunners: 0, github: { credentials: 'default', scope: { kind: 'org', org } } });
    const { pool, listedRepositories, queue } = await poolHearingRepositories(env.client, env.w.taskQueue, settings);
    const { client, asked } = queryCountingClient(env.client, recentRepositoriesQuery.name);
    const activities = createGitHubSweepActivities({
      controllerId: 'test-controller',
      client,
      namespace: 'default',
      github: { get: () => new GitHubDouble() },
      jobs: { jobQueued: async () => undefined },
      queryTimeoutMs: 2_000,
    });
    const args: GitHubSweepArgs = { provider: settings.provider, gracePeriodMs: 3_600_000, lostJobAgeMs: 60_000, lostJobRepositories: 20, lostJobRound: 0 };
    const lookedInto = async () => Object.keys((await activities.sweepGitHubRunners(args)).lostJobRotation ?? {}).sort();
    try {
      await queue(8_101, `${org}/alpha`);
      await listedRepositories(1);
      expect(await lookedInto()).toEqual([`repo:${org}/alpha`]);
      expect(asked()).toBe(1);

      // Nothing heard since: the list the pool gave is used again.
      expect(await lookedInto()).toEqual([`repo:${org}/alpha`]);
      expect(asked()).toBe(1);

      // A job from another repository changes the digest in the glance: the pool is asked again.
      await queue(8_102, `${org}/beta`);
      await listedRepositories(2);
      expect(await lookedInto()).toEqual([`repo:${org}/alpha`, `repo:${org}/beta`]);
      expect(asked()).toBe(2);
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});
