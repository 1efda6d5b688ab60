import { printJson, type Command } from '../command';
import { formatTable } from '../table';
import type { ScheduleView } from '../../api/dashboard/schedule-runs';
import type { ProviderSweep, SweepRun } from '../../api/dashboard/sweep-runs';

interface SweepNow {
  provider: string;
  scheduleId: string;
  paused: boolean;
}

/** "5m", "1h", "1h30m": the interval as people write it in the config. */
export function every(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '';
  const s = Math.round(ms / 1000);
  const parts: [number, string][] = [[Math.floor(s / 3600), 'h'], [Math.floor((s % 3600) / 60), 'm'], [s % 60, 's']];
  return parts.filter(([n]) => n > 0).map(([n, unit]) => `${n}${unit}`).join('') || '0s';
}

/** A schedule's state in a word or two: `every 5m`, `paused: why`, or `missing` when no worker has made it. */
export function scheduleText(view: ScheduleView<unknown>, missing: string): string {
  if (!view.scheduled) return missing;
  if (view.paused) return `paused${view.note ? `: ${view.note}` : ''}`;
  return `every ${every(view.intervalMs)}`;
}

/** What a run did to machines, and at GitHub when it looked there. */
export function sweepOutcome(run: SweepRun | undefined): string {
  if (!run) return '';
  if (!run.result) return run.error ?? '';
  const { deleted, listed, failed, github } = run.result;
  const machines = `deleted ${deleted} of ${listed} listed, ${failed} failed`;
  if (!github) return machines;
  const unreadable = github.unreadable?.length ? `, ${github.unreadable.length} refused (gone, or not the credentials' to read; left alone a while: ${github.unreadable.join(', ')})` : '';
  return `${machines}; at GitHub ${github.registrationsRemoved} removed, ${github.jobsRequeued} jobs routed again, ${github.jobsDequeued} taken out of a queue${unreadable}`;
}

export const sweepCommands: Record<string, Command> = {
  list: {
    usage: 'list',
    summary: "Each provider's orphan sweep: its schedule, next run and what the last run did",
    options: {},
    arity: 0,
    async run(ctx) {
      const { sweeps } = await ctx.api.get<{ sweeps: ProviderSweep[] }>('/api/v1/sweeps?runs=1');
      if (ctx.json) return printJson(ctx, sweeps);
      ctx.out(
        formatTable(
          ['PROVIDER', 'SCHEDULE', 'NEXT RUN', 'LAST RUN', 'STATUS', 'RESULT'],
          sweeps.map((s) => [s.provider, scheduleText(s, 'no schedule (no worker has started with this provider)'), s.nextRunAt, s.runs[0]?.scheduledAt, s.runs[0]?.status, sweepOutcome(s.runs[0])]),
        ),
      );
    },
  },
  run: {
    usage: 'run PROVIDER',
    summary: "Sweep a provider now, through its schedule (a sweep already running finishes first)",
    options: {},
    arity: 1,
    async run(ctx) {
      const provider = ctx.positionals[0]!;
      const result = await ctx.api.post<SweepNow>(`/api/v1/sweeps/${encodeURIComponent(provider)}`, undefined);
      if (ctx.json) return printJson(ctx, result);
      const paused = result.paused ? ' (its schedule is paused, so only this run happens)' : '';
      ctx.out(`${result.scheduleId} triggered${paused}; \`runnerflow sweep list\` shows its result`);
    },
  },
};
