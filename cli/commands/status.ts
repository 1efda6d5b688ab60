/** `runnerflow status`: the installation at a glance, each problem with what to do about it. */
import type { CheckStatus, InstallationStatus } from '../../api/installation-status';
import { printJson, type Command } from '../command';
import { CliError } from '../errors';

const LABEL: Record<CheckStatus, string> = { ok: 'ok', warning: 'WARNING', failing: 'FAILING' };

/** The status as an operator reads it: one line per check, its problems indented under it. */
export function statusText(status: InstallationStatus): string {
  const names = status.checks.map((c) => c.name.replace('_', ' '));
  const nameWidth = Math.max('CHECK'.length, ...names.map((n) => n.length)) + 2;
  const statusWidth = Math.max('STATUS'.length, ...status.checks.map((c) => LABEL[c.status].length)) + 2;
  const indent = ' '.repeat(nameWidth + statusWidth);
  const lines = status.checks.flatMap((c, i) => [
    `${names[i]!.padEnd(nameWidth)}${LABEL[c.status].padEnd(statusWidth)}${c.summary}`,
    ...(c.problems ?? []).map((p) => `${indent}- ${p}`),
  ]);
  return [
    `Status:      ${LABEL[status.status]}`,
    `Namespace:   ${status.namespace}`,
    `Task queue:  ${status.taskQueue}`,
    '',
    `${'CHECK'.padEnd(nameWidth)}${'STATUS'.padEnd(statusWidth)}WHAT`,
    ...lines,
  ].join('\n');
}

export const statusCommands: Record<string, Command> = {
  '': {
    usage: '',
    summary: 'Whether the installation works: Temporal, GitHub credentials, webhooks, workers, pools, schedules, unmatched jobs, unconfirmed deletes (exit 3 when a check fails)',
    options: {},
    arity: 0,
    async run(ctx) {
      const status = await ctx.api.get<InstallationStatus>('/api/v1/status');
      if (ctx.json) printJson(ctx, status);
      else ctx.out(statusText(status));
      // Scripts and monitors read the exit code; the output has already said what is wrong.
      if (status.status === 'failing') throw new CliError('a check is failing', 3);
    },
  },
};
