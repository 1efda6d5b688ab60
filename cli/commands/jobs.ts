import type { JobWhereabouts } from '../../api/job-whereabouts';
import type { JobRoute } from '../../api/routes/jobs';
import { printJson, type Command } from '../command';
import { CliError } from '../errors';
import { formatFields, formatTable } from '../table';

interface UnmatchedJob {
  jobId: number;
  labels: string[];
  repository?: string;
  reason: string;
  recordedAt?: string;
}

export const jobCommands: Record<string, Command> = {
  show: {
    usage: 'show JOB_ID',
    summary: 'Where a GitHub job is: on a runner, queued in a pool with what it waits for, or unmatched with why',
    options: {},
    arity: 1,
    async run(ctx) {
      const job = await ctx.api.get<JobWhereabouts>(`/api/v1/jobs/${encodeURIComponent(ctx.positionals[0]!)}`);
      if (ctx.json) return printJson(ctx, job);
      if ('runner' in job) {
        return ctx.out(formatFields([['Job', job.jobId], ['State', job.state === 'running' ? 'running' : 'finished: its runner is done with it'], ['Pool', job.pool], ['Runner', job.runner.name], ['Runner status', `${job.runner.status} / ${job.runner.runnerStatus}`]]));
      }
      if (job.state === 'unmatched') {
        return ctx.out(formatFields([['Job', job.jobId], ['State', 'unmatched: no pool took it'], ['Repository', job.repository], ['Labels', job.labels], ['Reason', job.reason], ['Recorded', job.recordedAt]]));
      }
      ctx.out(
        formatFields([
          ['Job', job.jobId],
          ['State', 'queued'],
          ['Pool', job.pool],
          ['Repository', job.repository],
          ['Labels', job.labels],
          ['Queued at', job.queuedAt],
          ['Ahead of it', job.ahead === undefined ? undefined : `${job.ahead} job${job.ahead === 1 ? '' : 's'} queued earlier in the pool`],
        ]),
      );
      ctx.out('Waiting for:');
      for (const reason of job.waitingFor) ctx.out(`  - ${reason}`);
    },
  },
  route: {
    usage: 'route --labels LABELS [--repository OWNER/NAME]',
    summary: "Which pool a job with these runs-on labels would go to now, or why none would take it",
    options: { labels: { type: 'string' }, repository: { type: 'string' } },
    optionHelp: ['--labels LABELS             the job\'s runs-on labels, separated by commas (self-hosted implied)', '--repository OWNER/NAME     the job\'s repository: pools of other repositories are left out'],
    arity: 0,
    async run(ctx) {
      const labels = ctx.values.labels;
      if (typeof labels !== 'string' || labels.trim() === '') throw new CliError('jobs route needs --labels, e.g. --labels self-hosted,linux,x64', 2);
      const query = new URLSearchParams({ labels });
      if (typeof ctx.values.repository === 'string') query.set('repository', ctx.values.repository);
      const route = await ctx.api.get<JobRoute>(`/api/v1/jobs/route?${query}`);
      if (ctx.json) return printJson(ctx, route);
      if (route.scaleSetPools?.length) return ctx.out(route.reason ?? `a scale set takes it: ${route.scaleSetPools.join(', ')}`);
      if (route.pools.length === 0) return ctx.out(`no pool would take it: ${route.reason}`);
      if (route.pools.length === 1) return ctx.out(`pool ${route.pools[0]} (priority ${route.priority})`);
      ctx.out(`one of ${route.pools.join(', ')} (priority ${route.priority}): the one with the most free capacity when the job arrives`);
    },
  },
  unmatched: {
    usage: 'unmatched',
    summary: 'Queued jobs no pool could take, with the reason (newest last)',
    options: {},
    arity: 0,
    async run(ctx) {
      const { jobs } = await ctx.api.get<{ jobs: UnmatchedJob[] }>('/api/v1/jobs/unmatched');
      if (ctx.json) return printJson(ctx, jobs);
      if (jobs.length === 0) return ctx.out('no unmatched jobs');
      ctx.out(formatTable(['JOB', 'REPOSITORY', 'LABELS', 'REASON', 'RECORDED'], jobs.map((j) => [j.jobId, j.repository, j.labels, j.reason, j.recordedAt])));
    },
  },
};
