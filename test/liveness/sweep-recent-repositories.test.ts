/**
 * The sweep's look for lost jobs of an organisation pool starts with the repositories the pool
 * has lately had jobs from, which only the pool knows. It asks the pool once, and again only
 * when the digest of that list in the pool's glance has changed: every sweep asking every
 * organisation pool kept a worker replaying pools it could not hold in its cache.
 */
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createGitHubSweepActivities, type GitHubSweepArgs } from '../../activities/github-sweep-activities';
import { PoolDirectory } from '../../api/pool-directory';
import { deletePoolSignal, jobQueuedSignal, poolWorkflowId, recentRepositoriesQuery } from '../../workflows/pool-messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { runnerPool } from '../../workflows/runner-pool';
import { poolSettings } from '../pool/helpers';
import { GitHubDouble } from '../support/github-double';
import { eventually, FAST_TIMINGS, uniqueName, useTestWorker } from '../support/temporal';

const env = useTestWorker();

/** The same server through a client of its own that counts the recent-repositories queries it sends. */
function countingClient(client: Client): { client: Client; asked: () => number } {
  const counting = new Client({ connection: client.connection, namespace: 'default' });
  const getHandle = counting.workflow.getHandle.bind(counting.workflow);
  let asked = 0;
  counting.workflow.getHandle = ((workflowId: string, runId?: string) => {
    const handle = getHandle(workflowId, runId);
    const query = handle.query.bind(handle);
    handle.query = ((def: { name: string } | string, ...args: unknown[]) => {
      if ((typeof def === 'string' ? def : def.name) === recentRepositoriesQuery.name) asked += 1;
      return query(def as never, ...(args as []));
    }) as typeof handle.query;
    return handle;
  }) as typeof counting.workflow.getHandle;
  return { client: counting, asked: () => asked };
}

describe('an organisation pool’s recent repositories', () => {
  it('are asked for once, and again only when the pool’s glance shows they changed', async () => {
    const org = uniqueName('recent-org').toLowerCase().slice(0, 30);
    const settings = poolSettings({ provider: uniqueName('recent-provider'), minIdleRunners: 0, maxRunners: 0, github: { credentials: 'default', scope: { kind: 'org', org } } });
    const pool = await env.client.workflow.start(runnerPool, {
      taskQueue: env.w.taskQueue,
      workflowId: poolWorkflowId(settings.name),
      args: [{ settings, timings: { ...FAST_TIMINGS, poolGlanceIntervalMs: 0 } }],
      memo: { ...poolMemoOf(settings) },
    });
    const directory = new PoolDirectory(env.client, 0);
    const listedRepositories = async (count: number) =>
      eventually(async () => ((await directory.fetch()).find((p) => p.name === settings.name)?.memo?.glance?.repositories?.count === count ? true : undefined), 20_000, `visibility to list a glance of ${count} repositories`);
    const queue = (jobId: number, repository: string) => pool.signal(jobQueuedSignal, { jobId, labels: settings.labels, repository, queuedAt: new Date().toISOString() });
    const { client, asked } = countingClient(env.client);
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
