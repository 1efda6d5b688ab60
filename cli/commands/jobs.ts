import { printJson, type Command } from '../command';
import { formatTable } from '../table';

interface UnmatchedJob {
  jobId: number;
  labels: string[];
  repository?: string;
  reason: string;
  recordedAt?: string;
}

export const jobCommands: Record<string, Command> = {
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
