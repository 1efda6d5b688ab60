/**
 * The look for an organisation pool's lost jobs stays within its bound however many repositories
 * its pools have heard from: at most 25 runs opened among them all per sweep, each repository an
 * equal share of what is left, and the repositories the bound did not reach keep where they stood.
 * A real pool on the real server; GitHub is a double that lists old queued runs in every repository.
 */
import { describe, expect, it } from 'vitest';
import { createGitHubSweepActivities } from '../../activities/github-sweep-activities';
import { QUEUED_RUNS_PER_SWEEP, type LostJobRotation } from '../../domain/lost-job-rotation';
import type { GitHubScope, QueuedGitHubJob, QueuedGitHubRun } from '../../github/port';
import { poolMemoOf } from '../../workflows/pool-memo';
import { deletePoolSignal, jobsQueuedSignal, poolWorkflowId, recentRepositoriesQuery } from '../../workflows/pool-messages';
import { runnerPool } from '../../workflows/runner-pool';
import { poolSettings } from '../pool/helpers';
import { GitHubDouble } from '../support/github-double';
import { eventually, FAST_TIMINGS, uniqueName, useTestWorker } from '../support/temporal';

const env = useTestWorker();

/** Three old queued runs, a job each, in every repository. */
class QueuedEverywhere extends GitHubDouble {
  readonly listed: string[] = [];
  readonly opened: string[] = [];
  override async listQueuedRuns(scope: Extract<GitHubScope, { kind: 'repo' }>): Promise<QueuedGitHubRun[]> {
    this.listed.push(`${scope.owner}/${scope.repo}`);
    return [1, 2, 3].map((id) => ({ id, createdAt: new Date(Date.now() - 3_600_000).toISOString() }));
  }
  override async listQueuedJobsOfRun(scope: Extract<GitHubScope, { kind: 'repo' }>, runId: number): Promise<QueuedGitHubJob[]> {
    const repository = `${scope.owner}/${scope.repo}`;
    this.opened.push(`${repository}#${runId}`);
    return [{ id: this.opened.length, runId, labels: ['self-hosted', 'linux'], repository, createdAt: new Date(Date.now() - 3_600_000).toISOString() }];
  }
}

describe('an organisation pool that has heard from more repositories than the bound reaches', () => {
  it('opens at most the bound of runs among them, and the repositories left keep where they stood', async () => {
    const org = uniqueName('org').toLowerCase();
    const provider = uniqueName('provider');
    const settings = poolSettings({ github: { credentials: 'default', scope: { kind: 'org', org } }, provider, maxRunners: 0 });
    const pool = await env.client.workflow.start(runnerPool, {
      taskQueue: env.w.taskQueue,
      workflowId: poolWorkflowId(settings.name),
      args: [{ settings, timings: FAST_TIMINGS }],
      memo: { ...poolMemoOf(settings) },
    });
    try {
      const repositories = Array.from({ length: 30 }, (_, i) => `${org}/repo-${i}`);
      await pool.signal(jobsQueuedSignal, { jobs: repositories.map((repository, i) => ({ jobId: 1_000 + i, labels: ['linux'], repository, queuedAt: new Date().toISOString() })) });
      await eventually(async () => ((await pool.query(recentRepositoriesQuery)).length === 30 ? true : undefined), 10_000, 'the pool to record its repositories');

      const github = new QueuedEverywhere();
      const routed: number[] = [];
      const sweep = createGitHubSweepActivities({
        controllerId: 'test-controller',
        client: env.client,
        namespace: 'default',
        github: { get: () => github },
        jobs: { jobQueued: async (job) => void routed.push(job.jobId) },
      });
      const stood: LostJobRotation = { newest: 1, cursor: 1 };
      const lostJobRotation = Object.fromEntries(repositories.map((repository) => [`repo:${repository}`, stood]));
      // Visibility lists a new pool within seconds.
      const report = await eventually(async () => {
        const r = await sweep.sweepGitHubRunners({ provider, gracePeriodMs: 0, lostJobAgeMs: 0, lostJobRepositories: 30, lostJobRotation });
        return r.scopes > 0 ? r : undefined;
      }, 20_000, 'the sweep to find the pool');

      expect(github.opened).toHaveLength(QUEUED_RUNS_PER_SWEEP);
      // Each repository reached opened one run of its three (an equal share of 25 among 30), its new one first.
      expect(new Set(github.opened.map((run) => run.split('#')[0])).size).toBe(QUEUED_RUNS_PER_SWEEP);
      expect(github.opened.every((run) => run.endsWith('#2'))).toBe(true);
      // The repositories past the bound were not even listed, and keep where they stood.
      expect(github.listed).toHaveLength(QUEUED_RUNS_PER_SWEEP);
      const unreached = repositories.filter((repository) => !github.listed.includes(repository));
      expect(unreached).toHaveLength(30 - QUEUED_RUNS_PER_SWEEP);
      for (const repository of unreached) expect(report.lostJobRotation?.[`repo:${repository}`]).toEqual(stood);
      expect(routed).toHaveLength(QUEUED_RUNS_PER_SWEEP);
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
  });
});
