import { printJson, type Command } from '../command';
import { formatTable } from '../table';
import type { LivenessRun, ProviderLiveness } from '../../api/dashboard/liveness-runs';
import { scheduleText } from './sweep';

function outcome(run: LivenessRun | undefined): string {
  if (!run) return '';
  if (!run.result) return run.error ?? '';
  const { instances, counts, failures } = run.result;
  const parts = [`${instances} runner${instances === 1 ? '' : 's'} looked at`, `${counts.findings} found`];
  if (counts.orphaned > 0) parts.push(`${counts.orphaned} outlived their pool`);
  if (counts.uncounted > 0) parts.push(`${counts.uncounted} not counted by their pool`);
  if (counts.poolsReset > 0) parts.push(`${counts.poolsReset} pool${counts.poolsReset === 1 ? '' : 's'} reset (stuck on a nondeterminism error)`);
  if (counts.stuckRunnersEnded > 0) parts.push(`${counts.stuckRunnersEnded} stuck runner workflow${counts.stuckRunnersEnded === 1 ? '' : 's'} ended`);
  // Passes recorded before pools were asked have no such count.
  const asked = counts.poolsAskedToLook ?? 0;
  if (asked > 0) parts.push(`${asked} pool${asked === 1 ? '' : 's'} asked to look for runners that ended unreported`);
  if (failures.length > 0) parts.push(`${failures.length} call${failures.length === 1 ? '' : 's'} failed`);
  return parts.join(', ');
}

export const livenessCommands: Record<string, Command> = {
  list: {
    usage: 'list',
    summary: "Each provider's liveness checks (machines, and runners at GitHub): their schedules, next run and what the last pass found",
    options: {},
    arity: 0,
    async run(ctx) {
      const { liveness } = await ctx.api.get<{ liveness: ProviderLiveness[] }>('/api/v1/liveness?runs=1');
      if (ctx.json) return printJson(ctx, liveness);
      ctx.out(
        formatTable(
          ['PROVIDER', 'CHECK', 'SCHEDULE', 'NEXT RUN', 'LAST RUN', 'STATUS', 'RESULT'],
          liveness.map((l) => [l.provider, l.check, scheduleText(l, 'no schedule (no worker has started with this provider)'), l.nextRunAt, l.runs[0]?.scheduledAt, l.runs[0]?.status, outcome(l.runs[0])]),
        ),
      );
    },
  },
};
