/**
 * A pool whose worker is gone cannot answer a query; the server would hold the
 * sweep's query until its own long timeout. The sweep bounds each one, reports
 * the pool it could not ask, and goes on with the others.
 */
import { expect, it } from 'vitest';
import { createGitHubSweepActivities } from '../../activities/github-sweep-activities';
import { poolSettingsSchema } from '../../domain/pool';
import { poolMemoOf } from '../../workflows/pool-memo';
import { poolWorkflowId } from '../../workflows/pool-messages';
import { GitHubDouble } from '../support/github-double';
import { connectClient, uniqueName } from '../support/temporal';

it('a pool no worker serves is reported as not answering, within the query bound', async () => {
  const { client, connection } = await connectClient();
  const provider = uniqueName('silent-provider');
  const settings = poolSettingsSchema.parse({
    name: uniqueName('silent'),
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'octo', repo: 'app' } },
    labels: ['self-hosted', 'silent'],
    provider,
  });
  // The pool's workflow exists with its memo (so the sweep picks it) but nothing polls its task queue.
  const pool = await client.workflow.start('runnerPool', {
    taskQueue: uniqueName('tq-nobody'),
    workflowId: poolWorkflowId(settings.name),
    args: [],
    memo: { ...poolMemoOf(settings) },
  });
  try {
    const activities = createGitHubSweepActivities({ controllerId: 'test-controller', client, namespace: 'default', github: { get: () => new GitHubDouble() }, queryTimeoutMs: 500 });
    const started = Date.now();
    // Visibility lags the start: sweep until the pool is seen.
    let report = await activities.sweepGitHubRunners({ provider, gracePeriodMs: 0 });
    while (report.failed.length === 0 && Date.now() - started < 10_000) report = await activities.sweepGitHubRunners({ provider, gracePeriodMs: 0 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(report.failed).toEqual([{ target: `pool ${settings.name}`, error: expect.any(String) }]);
    expect(report.removed).toEqual([]);
  } finally {
    await pool.terminate('test done');
    await connection.close();
  }
});
