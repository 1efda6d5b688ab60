import { printJson, type Command } from '../command';
import { formatTable } from '../table';
import type { CredentialsRedelivery, RedeliveryRun } from '../../api/dashboard/redelivery-runs';
import { scheduleText } from './sweep';

/** What a pass did, in a line. */
export function redeliveryOutcome(run: RedeliveryRun | undefined): string {
  if (!run) return '';
  if (!run.result) return run.error ?? '';
  const { redelivered, givenUp, failing, hooks, unreadable, failures } = run.result;
  const parts = [`asked again ${redelivered}`, `given up ${givenUp}`, `still failing ${failing}`];
  if (hooks) parts.push(`${hooks.length} webhook${hooks.length === 1 ? '' : 's'} followed`);
  if (unreadable?.length) parts.push(`webhooks not listed to these credentials: ${unreadable.join(', ')}`);
  if (failures.length > 0) parts.push(`${failures.length} call${failures.length === 1 ? '' : 's'} failed`);
  return parts.join(', ');
}

export const redeliveryCommands: Record<string, Command> = {
  list: {
    usage: 'list',
    summary: "Each credentials' webhook redelivery: its schedule, next run and what the last pass asked GitHub for again",
    options: {},
    arity: 0,
    async run(ctx) {
      const { redeliveries } = await ctx.api.get<{ redeliveries: CredentialsRedelivery[] }>('/api/v1/redeliveries?runs=1');
      if (ctx.json) return printJson(ctx, redeliveries);
      ctx.out(
        formatTable(
          ['CREDENTIALS', 'SCHEDULE', 'NEXT RUN', 'LAST RUN', 'STATUS', 'RESULT'],
          redeliveries.map((r) => [r.credentials, scheduleText(r, 'no schedule (no worker has started with these credentials)'), r.nextRunAt, r.runs[0]?.scheduledAt, r.runs[0]?.status, redeliveryOutcome(r.runs[0])]),
        ),
      );
    },
  },
};
