import { formatFields, formatTable } from '../table';
import { ApiError, interrupted, usageError } from '../errors';
import { watchRunner } from '../watch';
import type { InstanceState } from '../../workflows/messages';
import { printJson, type Command } from '../command';

interface RunnerRow {
  name: string;
  pool: string | null;
  provider: string | null;
  status: string | null;
  leaked: boolean;
  startTime: string;
}

interface DeleteResult {
  runner: string;
  action: 'delete' | 'forceDelete';
  github?: string;
  warning?: string;
}

const path = (name: string) => `/api/v1/runners/${encodeURIComponent(name)}`;

export const runnerCommands: Record<string, Command> = {
  list: {
    usage: 'list [--pool POOL] [--status STATUS]',
    summary: 'List runner instances',
    options: { pool: { type: 'string' }, status: { type: 'string' } },
    optionHelp: ['--pool POOL                 only this pool', '--status STATUS             only this instance status (deleted shows ended ones)'],
    arity: 0,
    async run(ctx) {
      const query = new URLSearchParams();
      if (typeof ctx.values.pool === 'string') query.set('pool', ctx.values.pool);
      if (typeof ctx.values.status === 'string') query.set('status', ctx.values.status);
      const qs = query.size > 0 ? `?${query.toString()}` : '';
      const { runners } = await ctx.api.get<{ runners: RunnerRow[] }>(`/api/v1/runners${qs}`);
      if (ctx.json) return printJson(ctx, runners);
      ctx.out(
        formatTable(
          ['NAME', 'POOL', 'STATUS', 'PROVIDER', 'LEAKED', 'STARTED'],
          runners.map((r) => [r.name, r.pool, r.status, r.provider, r.leaked ? 'yes' : '', r.startTime]),
        ),
      );
    },
  },
  show: {
    usage: 'show NAME',
    summary: 'State of a runner with its status history',
    options: {},
    arity: 1,
    async run(ctx) {
      const state = await ctx.api.get<InstanceState>(path(ctx.positionals[0]!));
      if (ctx.json) return printJson(ctx, state);
      ctx.out(
        formatFields([
          ['Name', state.name],
          ['Pool', state.pool],
          ['Provider', state.provider],
          ['Status', state.status],
          ['Runner status', state.runnerStatus],
          ['Provider id', state.providerId],
          ['GitHub runner id', state.githubRunnerId],
          ['Job', state.jobId],
          ['Forced', state.forced],
          ['Leaked', state.leaked],
          ['Last error', state.lastError],
        ]),
      );
      if (state.transitions.length > 0) {
        ctx.out('');
        ctx.out(formatTable(['AT', 'FROM', 'TO', 'REASON'], state.transitions.map((t) => [t.at, t.from, t.to, t.reason])));
      }
    },
  },
  watch: {
    usage: 'watch NAME [--interval SECONDS]',
    summary: 'Follow a runner: print its transitions as they happen until it is deleted (Ctrl-C stops)',
    options: { interval: { type: 'string' } },
    optionHelp: ['--interval SECONDS          how often to ask (default 1); --json prints one JSON object per line'],
    arity: 1,
    async run(ctx) {
      const raw = typeof ctx.values.interval === 'string' ? ctx.values.interval : '1';
      const seconds = Number(raw);
      if (!Number.isFinite(seconds) || seconds < 0.1 || seconds > 3600) throw usageError(`--interval "${raw}" is not a number of seconds between 0.1 and 3600`);
      const end = await watchRunner({
        api: ctx.api,
        name: ctx.positionals[0]!,
        intervalMs: seconds * 1000,
        json: ctx.json,
        out: ctx.out,
        notice: ctx.notice,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      if (end === 'aborted') throw interrupted();
    },
  },
  delete: {
    usage: 'delete NAME [--force] [--bypass-busy]',
    summary: 'Delete a runner; --force deletes now (a busy runner is refused unless --bypass-busy)',
    options: { force: { type: 'boolean' }, 'bypass-busy': { type: 'boolean' } },
    optionHelp: [
      '--force                     delete now: provider errors do not stop it (GitHub is asked first)',
      '--bypass-busy               with --force: delete even if the runner is running a job',
    ],
    arity: 1,
    async run(ctx) {
      const name = ctx.positionals[0]!;
      const force = ctx.values.force === true;
      const bypass = ctx.values['bypass-busy'] === true;
      if (bypass && !force) throw usageError('--bypass-busy only applies with --force');
      const query = force ? `?force=true${bypass ? '&bypassBusy=true' : ''}` : '';
      let result: DeleteResult;
      try {
        result = await ctx.api.delete<DeleteResult>(`${path(name)}${query}`);
      } catch (err) {
        // The API's hint names its query parameter; here the flag is what to add.
        if (err instanceof ApiError && (err.code === 'runner_busy' || err.code === 'github_error')) {
          throw new ApiError(err.message.replace('add bypassBusy=true', 'add --bypass-busy'), err.status, err.code);
        }
        throw err;
      }
      if (ctx.json) return printJson(ctx, result);
      ctx.out(force ? `runner ${name} is being force-deleted` : `runner ${name} is being deleted`);
      if (result.warning) ctx.out(`warning: ${result.warning}`);
    },
  },
};
