/**
 * A pool whose worker is gone cannot answer a query; the server would hold the sweep's query
 * until its own long timeout. The sweep reads what it needs of a pool (credentials, scope,
 * labels, runner prefix) from the pool's memo, so such a pool's scope is swept all the same. It
 * asks a pool only when the memo does not tell it enough: an older memo without the credentials,
 * or a glance that shows an idle runner beside queued jobs. Each such query is bounded, and a
 * pool that does not answer is reported and the sweep goes on. The redelivery pass finds the
 * scopes whose webhooks it follows the same way.
 */
import { describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { createGitHubSweepActivities, type GitHubSweepReport } from '../../activities/github-sweep-activities';
import { poolScopesFrom } from '../../activities/webhook-redelivery-activities';
import { poolSettingsSchema, type PoolSettings } from '../../domain/pool';
import { controllerLabel } from '../../github/port';
import { poolMemoOf } from '../../workflows/pool-memo';
import { poolWorkflowId, type PoolGlance } from '../../workflows/pool-messages';
import { GitHubDouble } from '../support/github-double';
import { connectClient, eventually, uniqueName } from '../support/temporal';

const CONTROLLER = 'test-controller';

function silentSettings(): PoolSettings {
  return poolSettingsSchema.parse({
    name: uniqueName('silent'),
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'octo', repo: 'app' } },
    labels: ['self-hosted', 'silent'],
    provider: uniqueName('silent-provider'),
  });
}

/** The pool's workflow exists with this memo (so the sweep picks it), but nothing polls its task queue. */
function startSilentPool(client: Client, settings: PoolSettings, memo: Record<string, unknown>, taskQueue = uniqueName('tq-nobody')) {
  return client.workflow.start('runnerPool', { taskQueue, workflowId: poolWorkflowId(settings.name), args: [], memo });
}

/** Sweeps until `done` says the sweep has seen the pool (visibility lags its start), at most 10 s. */
async function sweepUntil(sweep: () => Promise<GitHubSweepReport>, done: (report: GitHubSweepReport) => boolean): Promise<GitHubSweepReport> {
  const started = Date.now();
  let report = await sweep();
  while (!done(report) && Date.now() - started < 10_000) report = await sweep();
  expect(Date.now() - started).toBeLessThan(10_000);
  return report;
}

const glance = (idle: number, queuedJobs: number): PoolGlance => ({
  counts: { alive: idle, idle, busy: 0, starting: 0, leaving: 0 },
  statuses: { running: idle },
  agents: { idle },
  queuedJobs,
  desired: idle,
  minIdleRunners: idle,
  at: Date.now(),
});

describe('the sweep and a pool no worker serves', () => {
  it('sweeps its scope from its memo without asking it, and asks it only when its glance shows an idle runner beside queued jobs', async () => {
    const { client, connection } = await connectClient();
    const settings = silentSettings();
    const github = new GitHubDouble();
    const leftover = `${settings.name}-0123456789`;
    github.runners.set(leftover, { id: 7, name: leftover, os: 'linux', status: 'offline', busy: false, labels: ['self-hosted', 'silent', controllerLabel(CONTROLLER)] });
    const pool = await startSilentPool(client, settings, { ...poolMemoOf(settings), glance: glance(1, 0) });
    try {
      const activities = createGitHubSweepActivities({ controllerId: CONTROLLER, client, namespace: 'default', github: { get: () => github }, queryTimeoutMs: 500 });
      // A grace period the test does not wait out: the registration is found and its clock started, not removed.
      const sweep = () => activities.sweepGitHubRunners({ provider: settings.provider, gracePeriodMs: 3_600_000, lostJobAgeMs: 60_000 });
      const report = await sweepUntil(sweep, (r) => r.scopes > 0);
      expect(report.failed).toEqual([]);
      expect(report).toMatchObject({ scopes: 1, ours: 1, owned: 0, removed: [] });
      expect(report.skipped).toEqual([{ name: leftover, reason: expect.stringMatching(/^untracked, first found \d+ s ago/) }]);
      expect(Object.keys(report.untrackedSince ?? {})).toEqual([`repo:octo/app ${leftover.toLowerCase()}`]);

      // An idle runner beside queued jobs may mean a lost webhook: the sweep needs the pool's queue, so it asks.
      await pool.terminate('memo replaced');
      const asked = await startSilentPool(client, settings, { ...poolMemoOf(settings), glance: glance(1, 2) });
      try {
        const second = await sweepUntil(sweep, (r) => r.failed.length > 0);
        expect(second.failed).toEqual([{ target: `pool ${settings.name}`, error: expect.any(String) }]);
        expect(second.scopes).toBe(1);
      } finally {
        await asked.terminate('test done');
      }
    } finally {
      await pool.terminate('test done').catch(() => undefined);
      await connection.close();
    }
  });

  it('asks a pool whose older memo does not name its credentials, and reports it as not answering within the query bound', async () => {
    const { client, connection } = await connectClient();
    const settings = silentSettings();
    const { credentials: _credentials, ...olderMemo } = poolMemoOf(settings);
    const pool = await startSilentPool(client, settings, olderMemo);
    try {
      const activities = createGitHubSweepActivities({ controllerId: CONTROLLER, client, namespace: 'default', github: { get: () => new GitHubDouble() }, queryTimeoutMs: 500 });
      const report = await sweepUntil(() => activities.sweepGitHubRunners({ provider: settings.provider, gracePeriodMs: 0 }), (r) => r.failed.length > 0);
      expect(report.failed).toEqual([{ target: `pool ${settings.name}`, error: expect.any(String) }]);
      expect(report.removed).toEqual([]);
    } finally {
      await pool.terminate('test done');
      await connection.close();
    }
  });

  it('gives the redelivery pass its scope from its memo without asking it, and asks one whose older memo does not name its credentials', async () => {
    const { client, connection } = await connectClient();
    const settings = silentSettings();
    const taskQueue = uniqueName('tq-nobody');
    const pool = await startSilentPool(client, settings, { ...poolMemoOf(settings) }, taskQueue);
    try {
      const scopesOf = poolScopesFrom(client, taskQueue, 500, () => undefined);
      const found = await eventually(async () => {
        const answer = await scopesOf('default');
        return answer.scopes.length > 0 ? answer : undefined;
      }, 10_000, 'the pool to be listed');
      expect(found).toEqual({ scopes: [{ kind: 'repo', owner: 'octo', repo: 'app' }], failed: [] });
      expect(await scopesOf('other-app')).toEqual({ scopes: [], failed: [] });

      await pool.terminate('memo replaced');
      const { credentials: _credentials, ...olderMemo } = poolMemoOf(settings);
      const older = await startSilentPool(client, settings, olderMemo, taskQueue);
      try {
        const asked = await eventually(async () => {
          const answer = await scopesOf('default');
          return answer.failed.length > 0 ? answer : undefined;
        }, 10_000, 'the pool with the older memo to be listed');
        expect(asked).toEqual({ scopes: [], failed: [{ target: `pool ${settings.name}`, error: expect.any(String) }] });
      } finally {
        await older.terminate('test done');
      }
    } finally {
      await pool.terminate('test done').catch(() => undefined);
      await connection.close();
    }
  });
});
