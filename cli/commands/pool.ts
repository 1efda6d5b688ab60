import { formatFields, formatTable } from '../table';
import { usageError } from '../errors';
import { printJson, type Command, type CommandContext } from '../command';
import { POOL_FLAGS, applyPoolFlags, readPoolFile, type PoolFlagValues } from '../pool-input';
import { MAX_KEPT } from '../../workflows/queued-jobs';
import { scaleSetDifferences } from '../../domain/scale-set';

interface PoolSummary {
  name: string;
  provider?: string;
  labels?: string[];
  priority?: number;
  maxRunners?: number;
  enabled?: boolean;
  /** The counts the pool last wrote (at most `poolGlanceInterval` old); absent until its first decision. */
  glance?: { counts: PoolCounts; queuedJobs: number };
}

interface PoolRunner {
  name: string;
  status: string;
  runnerStatus: string;
  /** starting, idle, busy or leaving. */
  phase?: string;
  jobId?: number;
  since: string;
}

interface PoolCounts {
  alive: number;
  idle: number;
  busy: number;
  starting: number;
  leaving: number;
}

function queuedText(pool: PoolDetail): string {
  const count = String(pool.queuedJobCount ?? pool.queuedJobs.length);
  return pool.queuedJobsDropped ? `${count} (${pool.queuedJobsDropped} more not kept: the pool holds at most ${MAX_KEPT.toLocaleString('en')})` : count;
}

interface PoolDetail {
  name: string;
  settings: Record<string, unknown> & { labels: string[]; github: { credentials: string; scope: Record<string, string> } };
  settingsVersion: number;
  runners: PoolRunner[];
  /** The oldest queued jobs; `queuedJobCount` counts them all. */
  queuedJobs: { jobId: number; labels: string[]; repository?: string }[];
  queuedJobCount?: number;
  queuedJobsDropped?: number;
  target: number;
  deleting: boolean;
  /** Scale-set pools: the listener's view (null while it is not running). */
  scaleSet?: ScaleSetDetail | null;
  counts?: PoolCounts;
}

interface ScaleSetDetail {
  name: string;
  status: string;
  scaleSetId?: number;
  sessionId?: string;
  lastMessageId: number;
  desiredRunners: number;
  minRunners: number;
  maxRunners: number;
  messagesApplied: number;
  jobsAcquired: number;
  waitingJobsAcquired?: number;
  unsupportedMessages?: number;
  lastUnsupportedType?: string;
  statistics?: Record<string, number>;
  lastError?: string;
  /** The pool's runner group, and the one the scale set is in at GitHub (they differ while it moves). */
  runnerGroup?: string;
  runnerGroupAtGitHub?: string;
  /** The scale set's name at GitHub (it differs from `name`, the pool's, while it is renamed). */
  nameAtGitHub?: string;
  /** Set only when the scale set found at GitHub has labels other than the pool's. */
  labelsAtGitHub?: string[];
}

function runnerGroupLine(s: ScaleSetDetail): string {
  const at = s.runnerGroupAtGitHub ?? s.runnerGroup ?? '-';
  return scaleSetDifferences(s).includes('runner_group') ? `${at} (moving to ${s.runnerGroup})` : at;
}

function scaleSetNameText(s: ScaleSetDetail): string {
  return scaleSetDifferences(s).includes('name') ? `${s.nameAtGitHub} (renaming to ${s.name})` : s.name;
}

function scaleSetFields(pool: PoolDetail): [string, unknown][] {
  if (pool.settings.mode !== 'scaleSet') return [];
  const s = pool.scaleSet;
  if (!s) return [['Scale set', 'listener not running']];
  const stats = s.statistics;
  return [
    ['Scale set', `${scaleSetNameText(s)} (id ${s.scaleSetId ?? '-'}, ${s.status})`],
    ['Runner group', runnerGroupLine(s)],
    ['Session', s.sessionId ?? '-'],
    ['Last message id', s.lastMessageId],
    ['Desired runners', `${s.desiredRunners} = min(max ${s.maxRunners}, min ${s.minRunners} + assigned ${stats?.totalAssignedJobs ?? 0})`],
    [
      'Statistics',
      stats
        ? `available ${stats.totalAvailableJobs}, acquired ${stats.totalAcquiredJobs}, assigned ${stats.totalAssignedJobs}, running ${stats.totalRunningJobs}, ` +
          `runners ${stats.totalRegisteredRunners} (busy ${stats.totalBusyRunners}, idle ${stats.totalIdleRunners})`
        : '-',
    ],
    ['Messages applied', `${s.messagesApplied} (jobs acquired ${s.jobsAcquired}${s.waitingJobsAcquired ? `, ${s.waitingJobsAcquired} of them no message offered` : ''})`],
    ...(s.unsupportedMessages ? ([['Messages of unknown type', `${s.unsupportedMessages} acknowledged unread (latest: ${s.lastUnsupportedType ?? '-'})`]] as [string, unknown][]) : []),
    ...(s.labelsAtGitHub
      ? ([['Labels at GitHub', `${s.labelsAtGitHub.join(', ') || '(none)'}: not the pool's; jobs naming a label the scale set lacks never reach it (delete the pool and create it again)`]] as [string, unknown][])
      : []),
    ...(s.lastError ? ([['Listener error', s.lastError]] as [string, unknown][]) : []),
  ];
}

const path = (name: string) => `/api/v1/pools/${encodeURIComponent(name)}`;

const POOL_FLAG_HELP = [
  '-f, --file FILE            pool settings as YAML or JSON; flags override it',
  '--name, --provider, --labels a,b, --credentials NAME',
  '--repo OWNER/REPO | --org ORG | --enterprise ENTERPRISE',
  '--image, --flavor, --os-type linux|windows, --os-arch amd64|arm64|arm|i386',
  '--min-idle N, --max-runners N, --priority N',
  '--bootstrap-timeout DURATION, --idle-timeout DURATION (e.g. 10m)',
  '--runner-prefix P, --runner-group G, --runner-group-id N',
  '--enabled true|false, --ephemeral true|false',
  '--mode webhook|scaleSet, --scale-set-name NAME, --min-runners N (scale-set pools)',
];

function scopeText(scope: Record<string, string> | undefined): string {
  if (!scope) return '-';
  if (scope.kind === 'repo') return `repo ${scope.owner}/${scope.repo}`;
  const kind = scope.kind ?? '';
  return `${kind} ${scope[kind] ?? ''}`;
}

function settingsFrom(ctx: CommandContext, base: Record<string, unknown>): Record<string, unknown> {
  const flags = ctx.values as PoolFlagValues;
  const fromFile = flags.file ? readPoolFile(flags.file) : {};
  return applyPoolFlags({ ...base, ...fromFile }, flags);
}

export const poolCommands: Record<string, Command> = {
  list: {
    usage: 'list',
    summary: 'List pools',
    options: {},
    arity: 0,
    async run(ctx) {
      const { pools } = await ctx.api.get<{ pools: PoolSummary[] }>('/api/v1/pools');
      if (ctx.json) return printJson(ctx, pools);
      ctx.out(
        formatTable(
          ['NAME', 'PROVIDER', 'LABELS', 'PRIORITY', 'MAX', 'ENABLED', 'IDLE', 'BUSY', 'STARTING', 'QUEUED'],
          pools.map((p) => {
            const g = p.glance;
            return [p.name, p.provider, p.labels, p.priority, p.maxRunners, p.enabled, g?.counts.idle, g?.counts.busy, g?.counts.starting, g?.queuedJobs];
          }),
        ),
      );
    },
  },
  show: {
    usage: 'show NAME',
    summary: 'Settings, runners and queued jobs of a pool',
    options: {},
    arity: 1,
    async run(ctx) {
      const pool = await ctx.api.get<PoolDetail>(path(ctx.positionals[0]!));
      if (ctx.json) return printJson(ctx, pool);
      const s = pool.settings;
      ctx.out(
        formatFields([
          ['Name', pool.name],
          ['Provider', s.provider],
          ['GitHub', `${scopeText(s.github.scope)} (credentials ${s.github.credentials})`],
          ['Labels', s.labels],
          ['Image', s.image],
          ['Flavor', s.flavor],
          ['OS', `${String(s.osType)}/${String(s.osArch)}`],
          ['Runners', `${pool.runners.length} (target ${pool.target}, min idle ${String(s.minIdleRunners)}, max ${String(s.maxRunners)})`],
          ['Alive', pool.counts ? `${pool.counts.alive} (idle ${pool.counts.idle}, busy ${pool.counts.busy}, starting ${pool.counts.starting}); leaving ${pool.counts.leaving}` : undefined],
          ['Queued jobs', queuedText(pool)],
          ['Priority', s.priority],
          ['Enabled', s.enabled],
          ['Ephemeral', s.ephemeral],
          ['Settings version', pool.settingsVersion],
          ['Deleting', pool.deleting],
          ...scaleSetFields(pool),
        ]),
      );
      if (pool.runners.length > 0) {
        ctx.out('');
        ctx.out(
          formatTable(
            ['RUNNER', 'STATUS', 'RUNNER STATUS', 'PHASE', 'JOB', 'SINCE'],
            pool.runners.map((r) => [r.name, r.status, r.runnerStatus, r.phase, r.jobId, r.since]),
          ),
        );
      }
      if (pool.queuedJobs.length > 0) {
        ctx.out('');
        ctx.out(formatTable(['QUEUED JOB', 'LABELS', 'REPOSITORY'], pool.queuedJobs.map((j) => [j.jobId, j.labels, j.repository])));
        const count = pool.queuedJobCount ?? pool.queuedJobs.length;
        if (count > pool.queuedJobs.length) ctx.out(`(the oldest ${pool.queuedJobs.length} of ${count} queued jobs)`);
      }
    },
  },
  create: {
    usage: 'create [--file pool.yaml] [flags]',
    summary: 'Create a pool from a file and/or flags',
    options: POOL_FLAGS,
    optionHelp: POOL_FLAG_HELP,
    arity: 0,
    async run(ctx) {
      const settings = settingsFrom(ctx, {});
      if (Object.keys(settings).length === 0) throw usageError('give the pool with --file and/or flags');
      const { pool } = await ctx.api.post<{ pool: { name: string } }>('/api/v1/pools', settings);
      if (ctx.json) return printJson(ctx, pool);
      ctx.out(`pool ${pool.name} created`);
    },
  },
  update: {
    usage: 'update NAME [--file pool.yaml] [flags]',
    summary: 'Change a pool: the current settings with the file and flags applied',
    options: POOL_FLAGS,
    optionHelp: POOL_FLAG_HELP,
    arity: 1,
    async run(ctx) {
      const name = ctx.positionals[0]!;
      const current = await ctx.api.get<PoolDetail>(path(name));
      const settings = settingsFrom(ctx, current.settings);
      const { pool } = await ctx.api.put<{ pool: { name: string } }>(path(name), settings);
      if (ctx.json) return printJson(ctx, pool);
      ctx.out(`pool ${pool.name} update sent`);
    },
  },
  delete: {
    usage: 'delete NAME',
    summary: 'Drain and delete a pool (busy runners finish their jobs first)',
    options: {},
    arity: 1,
    async run(ctx) {
      const result = await ctx.api.delete<unknown>(path(ctx.positionals[0]!));
      if (ctx.json) return printJson(ctx, result);
      ctx.out(`pool ${ctx.positionals[0]!} is being deleted`);
    },
  },
};
