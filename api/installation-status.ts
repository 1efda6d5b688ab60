/**
 * The installation at a glance, for an operator's first question ("is it working, and if not,
 * what is wrong?"): each part runnerflow depends on checked once, and each problem said with
 * what to do about it. `GET /api/v1/status` and `runnerflow status`.
 *
 * Every check is bounded and reads only what is already kept (Temporal's task queue, schedules,
 * visibility and the pools' own state) or costs nothing (GitHub's rate limit, which a look at
 * does not spend), so a status costs a few calls whatever the number of runners. A check that cannot be made is a warning that says why, never an error for the whole.
 */
import { reportErrorText } from '../activities/failures';
import type { GitHubCredentialsConfig } from '../config/schema';
import { workflowCacheAdvice } from '../config/workflow-cache';
import { GitHubApiError, GitHubRateLimitError } from '../github/port';
import { secretRefOf } from '../github/registry';
import { MACHINE_CLEANUP_WORKFLOW } from '../workflows/cleanup-messages';
import { providerLiveness } from './dashboard/liveness-runs';
import { credentialsRedelivery } from './dashboard/redelivery-runs';
import type { ScheduleView } from './dashboard/schedule-runs';
import { providerSweep } from './dashboard/sweep-runs';
import { readPoolSnapshots } from './pool-metrics';
import type { PoolEntry } from './pool-directory';
import { poolsWithReportedProblems } from './temporal/reported-problems';
import type { PoolSnapshot } from '../observability/pool-gauges';
import type { Services } from './services';
import { isNotFound, isWorkflowTaskFailing, temporalFailureReason } from './temporal/errors';
import { taskQueuePollers } from './temporal/pollers';
import { readUnmatchedJobs } from './temporal/unmatched-record';
import { quote } from './temporal/visibility';

export type CheckStatus = 'ok' | 'warning' | 'failing';

export interface StatusCheck {
  name: 'temporal' | 'github' | 'webhooks' | 'workers' | 'pools' | 'schedules' | 'unmatched_jobs' | 'machine_cleanups';
  status: CheckStatus;
  summary: string;
  /** One line per thing wrong, each saying what to do. */
  problems?: string[];
}

export interface InstallationStatus {
  /** The worst of the checks. */
  status: CheckStatus;
  namespace: string;
  taskQueue: string;
  checkedAt: string;
  checks: StatusCheck[];
}

/**
 * A poller the server saw within this long is a worker that is there: a worker's long poll
 * lasts up to a minute before it polls again, and the server lists pollers for minutes after
 * they stop.
 */
export const LIVE_POLLER_MS = 2 * 60_000;

const RANK: Record<CheckStatus, number> = { ok: 0, warning: 1, failing: 2 };
const worst = (statuses: CheckStatus[]): CheckStatus => statuses.reduce<CheckStatus>((a, b) => (RANK[b] > RANK[a] ? b : a), 'ok');

const check = (name: StatusCheck['name'], status: CheckStatus, summary: string, problems: string[] = []): StatusCheck => ({
  name,
  status,
  summary,
  ...(problems.length > 0 ? { problems } : {}),
});

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

async function workersCheck(services: Services): Promise<StatusCheck> {
  const queue = `task queue "${services.deps.taskQueue}"`;
  const since = Date.now() - LIVE_POLLER_MS;
  const live = (await services.bounded(() => taskQueuePollers(services.deps.client, services.deps.taskQueue))).filter((p) => p.lastPollMs >= since);
  const workflows = live.filter((p) => p.kind === 'workflow');
  const activities = live.filter((p) => p.kind === 'activity');
  const workers = new Set([...workflows, ...activities].map((p) => p.identity));
  if (workflows.length === 0) {
    return check('workers', 'failing', `no worker has polled ${queue} in the last ${LIVE_POLLER_MS / 60_000} min`, [
      `no runner is created, deleted or checked until one does: start a worker (npm run worker) with ${queue}, namespace "${services.deps.client.options.namespace}"`,
    ]);
  }
  if (activities.length === 0) {
    return check('workers', 'failing', `${plural(workers.size, 'worker')} on ${queue}, none taking activities`, [
      'no machine is created or deleted and nothing is asked of GitHub: start a worker whose roles include activities',
    ]);
  }
  const builds = new Set(workflows.map((p) => p.buildId ?? 'unknown'));
  const summary = `${plural(workers.size, 'worker')} on ${queue} (${[...workers].sort().join(', ')})`;
  if (builds.size > 1) {
    return check('workers', 'warning', summary, [
      `the workers run ${builds.size} builds (${[...builds].sort().join(', ')}): a deploy under way, or a worker left on other code; a workflow one build wrote and another cannot replay stops until they agree`,
    ]);
  }
  return check('workers', 'ok', `${summary}, one build`);
}

function cacheProblem(services: Services, pools: number, snapshots: PoolSnapshot[]): string[] {
  const atWork = snapshots.reduce((n, s) => n + Object.entries(s.runnersByAgent).reduce((m, [status, count]) => (status === 'idle' ? m : m + count), 0), 0);
  const advice = workflowCacheAdvice(pools, atWork, services.deps.config.temporal.workflowCacheSize);
  return advice ? [advice] : [];
}

/**
 * Whether every pool decides. A pool's counts come from its glance, and only the pools the
 * server reports failing (`TemporalReportedProblems`), or that have no glance, are asked: a
 * query to each of hundreds of pools kept the workers replaying pools they did not cache, every
 * time an open dashboard refreshed its status. On a server that cannot report problems, every
 * pool is asked.
 */
async function poolsCheck(services: Services): Promise<StatusCheck> {
  const { client } = services.deps;
  const unreadable: string[] = [];
  let stuck = 0;
  const reported = await poolsWithReportedProblems(client, services.deps.taskQueue);
  const fromGlance = reported ? (pool: PoolEntry) => !reported.has(pool.workflowId) : false;
  const snapshots = await readPoolSnapshots(client, services.pools, { queryTimeoutMs: services.limits.summaryPoolTimeoutMs, fromGlance, onPoolReadFailed: (pool, err) => {
    // A pool that ended since it was listed has nothing wrong left to say.
    if (isNotFound(err)) return;
    services.stuckWorkflows.heardPool(pool, err);
    if (isWorkflowTaskFailing(err)) {
      stuck += 1;
      unreadable.push(
        `pool ${pool}: its workflow tasks are failing, so it starts no runner; its provider's liveness pass, called for now, resets it when its own code wrote what it cannot replay (its history in the Temporal Web UI says why)`,
      );
    } else {
      unreadable.push(`pool ${pool}: did not answer (${temporalFailureReason(err, services.deps.taskQueue)})`);
    }
  } });
  const listeners = snapshots
    .filter((s) => s.scaleSetListener !== undefined && s.scaleSetListener !== 'listening')
    .map((s) => `pool ${s.pool}: its scale set's listener is ${s.scaleSetListener}, so it takes no jobs (\`runnerflow pool show ${s.pool}\` says why)`);
  const total = snapshots.length + unreadable.length;
  const problems = [...unreadable.sort(), ...listeners, ...cacheProblem(services, total, snapshots)];
  return check('pools', stuck > 0 ? 'failing' : problems.length > 0 ? 'warning' : 'ok', `${plural(total, 'pool')}, ${snapshots.length} answering`, problems);
}

/** A schedule's trouble, if any: not made yet, paused by hand, or its last run failed. */
function scheduleProblem(view: ScheduleView<unknown>, offInConfig: boolean): string | undefined {
  if (offInConfig) return undefined;
  if (!view.scheduled) return `${view.scheduleId}: not there (a worker makes it when it starts with this config)`;
  if (view.paused) return `${view.scheduleId}: paused${view.note ? ` (${view.note})` : ''}, though the config has it on: unpause it, or restart a worker`;
  const last = view.runs[0];
  if (last && ['failed', 'timed_out', 'terminated'].includes(last.status)) return `${view.scheduleId}: its last run ${last.status.replace('_', ' ')}${last.error ? `: ${last.error}` : ''}`;
  return undefined;
}

async function schedulesCheck(services: Services): Promise<StatusCheck> {
  const { client, config } = services.deps;
  // Each read is made inside `bounded`, so that its calls carry the deadline.
  type Read = [() => Promise<ScheduleView<unknown>>, boolean];
  const views: Read[] = [
    ...config.providers.map((p): Read => [() => providerSweep(client, p.name, 1), !config.sweep.enabled]),
    ...config.providers.flatMap((p) => (['machines', 'github'] as const).map((c): Read => [() => providerLiveness(client, p.name, c, 1), !config.liveness.enabled])),
    ...config.github.credentials.map((c): Read => [() => credentialsRedelivery(client, c.name, 1), !config.redelivery.enabled]),
  ];
  const read = await Promise.all(views.map(async ([view, off]) => scheduleProblem(await services.bounded(view), off)));
  const problems = read.filter((p): p is string => p !== undefined);
  const off = [!config.sweep.enabled && 'sweep', !config.liveness.enabled && 'liveness', !config.redelivery.enabled && 'redelivery'].filter(Boolean);
  const summary = `${plural(views.length, 'schedule')}${off.length > 0 ? `; off in the config: ${off.join(', ')}` : ''}`;
  return check('schedules', problems.length > 0 ? 'warning' : 'ok', summary, problems);
}

async function unmatchedCheck(services: Services): Promise<StatusCheck> {
  const jobs = await readUnmatchedJobs(services.deps.client, services.deps.taskQueue, services.bounded);
  if (jobs.length === 0) return check('unmatched_jobs', 'ok', 'every job matched a pool');
  const labels = [...new Set(jobs.map((j) => j.labels.join(',')))].slice(0, 5);
  return check('unmatched_jobs', 'warning', `${plural(jobs.length, 'job')} matched no pool`, [
    `jobs waiting for labels no pool has (${labels.map((l) => `[${l}]`).join(' ')}): create or widen a pool (\`runnerflow jobs unmatched\` lists them)`,
  ]);
}

async function cleanupsCheck(services: Services): Promise<StatusCheck> {
  const { client, taskQueue } = services.deps;
  const { count } = await services.bounded(() =>
    client.workflow.count(`WorkflowType = ${quote(MACHINE_CLEANUP_WORKFLOW)} AND ExecutionStatus = 'Running' AND TaskQueue = ${quote(taskQueue)}`),
  );
  if (count === 0) return check('machine_cleanups', 'ok', 'no machine waits for its delete to be confirmed');
  return check('machine_cleanups', 'warning', `${plural(count, 'machine')} not confirmed deleted`, [
    `their deletes are retried with backoff until the provider confirms them (workflows cleanup/<name>); if the count keeps growing, the provider is failing its deletes`,
  ]);
}

/** Under this share of their hourly window left, credentials are near GitHub's rate limit. */
export const LOW_RATE_LIMIT_SHARE = 0.1;

const calls = (n: number): string => n.toLocaleString('en-US');
const clockUtc = (iso: string): string => `${iso.slice(11, 16)} UTC`;

/** How refused credentials are renewed: a secret file is read again by every process, a variable needs a restart. */
export function renewalHint(credentials: GitHubCredentialsConfig): string {
  const what = credentials.auth.type === 'pat' ? 'the renewed token' : "the App's new private key (and check its installation id)";
  const ref = secretRefOf(credentials);
  return 'file' in ref
    ? `write ${what} into ${ref.file}: every process uses it from its next call, with no restart`
    : `put ${what} in ${ref.env} and restart the processes (a secret file would be read again without one)`;
}

/** One look per credentials at their rate limit: it proves GitHub takes them, and says how much of the hour is left. */
async function githubCheck(services: Services): Promise<StatusCheck> {
  const { config, github } = services.deps;
  const names = config.github.credentials.map((c) => c.name);
  if (names.length === 0) return check('github', 'ok', 'no credentials configured');
  const looks = await Promise.all(
    names.map(async (name): Promise<{ name: string; status: CheckStatus; line: string; problem?: string }> => {
      try {
        const { limit, remaining, resetAt } = await github.get(name).rateLimit();
        const line = `${name}: ${calls(remaining)} of ${calls(limit)} calls left until ${clockUtc(resetAt)}`;
        if (remaining >= limit * LOW_RATE_LIMIT_SHARE) return { name, status: 'ok', line };
        return {
          name,
          status: 'warning',
          line,
          problem: `credentials ${name} are near GitHub's rate limit (${calls(remaining)} of ${calls(limit)} calls left until ${clockUtc(resetAt)}): runnerflow waits out the limit when it comes, and its runners start late meanwhile; spread pools over more credentials (an App per organisation) if this recurs`,
        };
      } catch (err) {
        if (err instanceof GitHubRateLimitError) {
          return { name, status: 'warning', line: `${name}: rate limited`, problem: `credentials ${name} are rate limited by GitHub for ${Math.ceil(err.retryAfterMs / 1_000)} s more: runners start late until then` };
        }
        const refused = err instanceof GitHubApiError && (err.status === 401 || err.status === 403);
        const reason = reportErrorText(err, 300);
        return refused
          ? { name, status: 'failing', line: `${name}: refused`, problem: `GitHub refused credentials ${name} (${reason}): no runner can be registered with them; ${renewalHint(config.github.credentials.find((c) => c.name === name)!)}` }
          : { name, status: 'warning', line: `${name}: not reached`, problem: `GitHub could not be asked about credentials ${name} (${reason})` };
      }
    }),
  );
  return check(
    'github',
    worst(looks.map((l) => l.status)),
    looks.map((l) => l.line).join('; '),
    looks.flatMap((l) => (l.problem ? [l.problem] : [])),
  );
}

/** A delivery refused for its signature this recently still says GitHub's secret is not runnerflow's. */
export const REFUSED_SIGNATURE_RECENT_MS = 15 * 60_000;

/**
 * Whether GitHub's deliveries can be taken: a secret that GitHub's webhook does not have fails
 * every delivery, and a rotation left half done keeps an old secret able to sign them. What this
 * process has seen of signatures says which (each API process counts its own).
 */
async function webhooksCheck(services: Services): Promise<StatusCheck> {
  const { secrets } = services.deps;
  if (!secrets.webhookSecret) {
    const webhookPools = (await services.pools.list()).filter((p) => p.memo && p.memo.mode !== 'scaleSet' && !p.memo.deleting);
    if (webhookPools.length === 0) return check('webhooks', 'ok', 'no webhook secret configured; no pool takes jobs from webhooks');
    return check('webhooks', 'warning', 'no webhook secret configured: every delivery is refused', [
      `${plural(webhookPools.length, 'pool')} in webhook mode: each hears of queued jobs only through the sweep's look at GitHub's queue; set RUNNERFLOW_WEBHOOK_SECRET or api.webhookSecret to the secret of GitHub's webhook`,
    ]);
  }
  const seen = services.signatures;
  const at = (ms: number) => clockUtc(new Date(ms).toISOString());
  const problems: string[] = [];
  const summaries: string[] = [];
  if (seen.lastRefusedAt !== undefined && Date.now() - seen.lastRefusedAt <= REFUSED_SIGNATURE_RECENT_MS) {
    summaries.push('deliveries refused for their signature');
    problems.push(
      `${plural(seen.refused, 'delivery', 'deliveries')} refused since this API process started, the last at ${at(seen.lastRefusedAt)}, for a signature that matches no configured secret: if they are GitHub's, its webhook has a secret runnerflow does not (api.webhookSecret${secrets.previousWebhookSecret ? ' nor api.previousWebhookSecret' : ''}); its deliveries fail and are asked for again in vain until the two agree`,
    );
  }
  if (secrets.previousWebhookSecret) {
    summaries.push('a secret rotation is under way: api.previousWebhookSecret is still accepted');
    const signed =
      seen.previous > 0 && seen.lastPreviousAt !== undefined
        ? `${plural(seen.previous, 'delivery', 'deliveries')} signed with it since this API process started, the last at ${at(seen.lastPreviousAt)}: GitHub still has the old secret; give it the new one`
        : `no delivery signed with it since this API process started (${at(seen.since)})`;
    const previousRef = services.deps.config.api.previousWebhookSecret;
    const ending =
      previousRef && 'file' in previousRef
        ? `empty its file ${previousRef.file} (every API process stops accepting it, with no restart)`
        : 'remove api.previousWebhookSecret and restart the API processes';
    problems.push(`${signed}; once GitHub signs with the new secret only, ${ending}: an old secret left accepted can still sign deliveries`);
  }
  if (problems.length === 0) return check('webhooks', 'ok', 'deliveries verified with api.webhookSecret');
  return check('webhooks', 'warning', summaries.join('; '), problems);
}

/** A check that could not be made: a warning saying why, so the others still stand. */
async function made(name: StatusCheck['name'], services: Services, run: () => Promise<StatusCheck>): Promise<StatusCheck> {
  try {
    return await run();
  } catch (err) {
    return check(name, 'warning', 'could not be checked', [temporalFailureReason(err, services.deps.taskQueue)]);
  }
}

export async function installationStatus(services: Services): Promise<InstallationStatus> {
  const { client, taskQueue } = services.deps;
  const namespace = client.options.namespace;
  const base = { namespace, taskQueue, checkedAt: new Date().toISOString() };
  try {
    await services.bounded(() => client.workflowService.describeNamespace({ namespace }));
  } catch (err) {
    // Without Temporal nothing else can be read, or done.
    const down = check('temporal', 'failing', `namespace "${namespace}" is not reachable`, [temporalFailureReason(err, taskQueue)]);
    return { status: 'failing', ...base, checks: [down] };
  }
  const checks = [
    check('temporal', 'ok', `namespace "${namespace}" reachable`),
    ...(await Promise.all([
      made('github', services, () => githubCheck(services)),
      made('webhooks', services, () => webhooksCheck(services)),
      made('workers', services, () => workersCheck(services)),
      made('pools', services, () => poolsCheck(services)),
      made('schedules', services, () => schedulesCheck(services)),
      made('unmatched_jobs', services, () => unmatchedCheck(services)),
      made('machine_cleanups', services, () => cleanupsCheck(services)),
    ])),
  ];
  return { status: worst(checks.map((c) => c.status)), ...base, checks };
}
