/**
 * The GitHub side of the sweep: runner registrations that look like ours (a pool's
 * naming and labels, in a pool's scope) but that no running workflow owns. They are
 * left behind by a crash between registration and machine creation, by a forced
 * delete whose GitHub removal failed, or by a dead busy runner whose job GitHub had
 * not yet given up. Each is removed once its workflow has been closed for the grace
 * period; a busy one never is (GitHub would refuse, and the job may still be real).
 * One with no workflow at all is removed once sweeps have found it so for the grace
 * period: GitHub gives a registration no creation time, so the first finding starts
 * the clock, carried from run to run in the report.
 *
 * Cost per run: one visibility listing of pools (their memos name each pool's credentials,
 * scope, labels and runner prefix; a pool whose older memo does not is asked, one poolState
 * query), one visibility listing of their running runners, one paginated
 * list-runners per GitHub scope, and a describe and a delete per orphan only. Looking
 * for lost jobs (activities/lost-job-search.ts) adds, per repository, one listing of its
 * queued runs and the jobs of at most QUEUED_RUNS_PER_SWEEP of them
 * (domain/lost-job-rotation.ts); per organisation, a listing of its repositories most
 * lately pushed to and one of its next repositories in turn; and, per pool whose glance
 * shows an idle runner beside queued jobs, a poolState query and a look at at most
 * SETTLED_CHECKS_PER_POOL of its old ones.
 */
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { log } from '@temporalio/activity';
import { PoolDirectory, type PoolEntry } from '../api/pool-directory';
import { andQuery, quote } from '../api/temporal/visibility';
import type { LostJobRotation } from '../domain/lost-job-rotation';
import type { PoolSettings } from '../domain/pool';
import { controllerLabel, scopeKey, type GitHubPort, type GitHubRunner, type GitHubScope } from '../github/port';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../workflows/messages';
import { jobProgressSignal, poolStateQuery, type PoolMemo, type PoolView, type QueuedJob } from '../workflows/pool-messages';
import { githubOfMemo } from '../workflows/pool-memo';
import { RUNNER_NAME, RUNNER_POOL } from '../workflows/search-attributes';
import { sweepLostWebhookJobs } from '../observability/metrics';
import { reportErrorText } from './failures';
import { createLostJobSearch, repoScopeOf, type ScopeGroup } from './lost-job-search';
import { activityTaskQueue } from './task-queue';

export type RegistrationSweepReason = 'orphaned' | 'untracked';

export interface GitHubSweepReport {
  /** GitHub scopes listed (one paginated list-runners each). */
  scopes: number;
  /** Registrations that match a pool's naming and labels. */
  ours: number;
  owned: number;
  removed: { name: string; scope: string; reason: RegistrationSweepReason }[];
  skipped: { name: string; reason: string }[];
  failed: { target: string; error: string }[];
  /** Jobs GitHub still had queued past the age limit that no pool knew of: handed to job routing again. */
  requeued: { jobId: number; repository: string }[];
  /** Jobs a pool still held as queued that GitHub had started, finished or no longer had (`gone`): taken out of the pool's queue. */
  dequeued?: { pool: string; jobId: number; status: string }[];
  /** Where the look for lost jobs stands in each repository's queued runs: the next sweep's `lostJobRotation`. */
  lostJobRotation?: Record<string, LostJobRotation>;
  /**
   * Where the round of each organisation's repositories stands (`org:<org>` → the page to list
   * next), and whose turn it is among an enterprise's organisations (`enterprise:<name>` → its
   * place in their names' order): the next sweep's `repositoryRound`.
   */
  repositoryRound?: Record<string, number>;
  /** Offline registrations with no workflow at all, by `untrackedKey`, and when a sweep first found them so: the next sweep's `untrackedSince`. */
  untrackedSince?: Record<string, number>;
  /**
   * What GitHub refused (404 or 403) while looking for lost jobs in an organisation's or an
   * enterprise's repositories (`repo:<owner>/<name>` or `org:<org>` → when): gone, or not the
   * credentials' to read, and left alone for a while (domain/lost-job-repositories.ts): the next sweep's `unreadable`.
   */
  unreadable?: Record<string, number>;
}

export interface GitHubSweepArgs {
  provider: string;
  gracePeriodMs: number;
  /** Look at repository pools' queues for jobs queued at least this long that no pool knows (a lost `queued` webhook). */
  lostJobAgeMs?: number;
  /** The last sweep's `lostJobRotation`, so that this one goes on round the queued runs where it stopped. */
  lostJobRotation?: Record<string, LostJobRotation>;
  /**
   * For organisation pools, the repositories looked into per sweep and organisation, those most
   * lately active first: queued from, as the pools heard, or pushed to, as GitHub lists them
   * (`sweep.lostJobRepositories`; domain/lost-job-repositories.ts); absent or 0: organisation
   * pools are not looked at.
   */
  lostJobRepositories?: number;
  /**
   * For organisation pools, more of the organisation's repositories looked into per sweep and
   * organisation, in turn by name, so that each is looked into in time, active or not
   * (`sweep.lostJobRound`); absent or 0: none.
   */
  lostJobRound?: number;
  /** The last sweep's `repositoryRound`, so that this one goes on round the organisations' repositories where it stopped. */
  repositoryRound?: Record<string, number>;
  /** The last sweep's `untrackedSince`: when each registration with no workflow was first found. */
  untrackedSince?: Record<string, number>;
  /** The last sweep's `unreadable`: what GitHub refused while looking for lost jobs, and when. */
  unreadable?: Record<string, number>;
}

export interface RemovePoolRegistrationsArgs {
  settings: Pick<PoolSettings, 'name' | 'runnerPrefix' | 'labels' | 'github'>;
}

export interface PoolRegistrationsReport {
  removed: string[];
  /** Still registered, with why (busy at GitHub, owned by a running workflow, ...): ask again later. */
  left: string[];
  failed: string[];
}

export interface GitHubSweepDeps {
  /** Only registrations carrying this installation's label (`controllerLabel`) are judged. */
  controllerId: string;
  client: Client;
  namespace: string;
  github: { get(credentials: string): GitHubPort };
  /** The webhook intake's routing (api/temporal-job-sink.ts): a pool takes the job, or it is recorded as unmatched. */
  jobs?: { jobQueued(job: QueuedJob & { deliveryId: string }): Promise<void> };
  now?: () => number;
  /** Bound on each poolState query. */
  queryTimeoutMs?: number;
}

/** A pool of the swept provider: its memo, and its state if the sweep had to ask for it. */
interface SweptPool {
  name: string;
  workflowId: string;
  memo: PoolMemo;
  view?: PoolView;
}

/** What the sweep needs of a pool's settings. */
type SweptSettings = Pick<PoolSettings, 'name' | 'runnerPrefix' | 'labels'> & { mode?: PoolSettings['mode']; github: Pick<PoolSettings['github'], 'credentials' | 'scope'> };

/** A pool's settings as its memo tells them; undefined for a memo written before it named the credentials. */
function settingsFromMemo(entry: PoolEntry): SweptSettings | undefined {
  const { memo } = entry;
  const github = githubOfMemo(memo);
  if (!memo || !github) return undefined;
  return {
    name: entry.name,
    labels: memo.labels,
    ...(memo.runnerPrefix ? { runnerPrefix: memo.runnerPrefix } : {}),
    ...(memo.mode ? { mode: memo.mode } : {}),
    github,
  };
}

/**
 * Queued jobs looked up at GitHub per pool and sweep, oldest first: a pool holding more
 * settled ones has them looked at over the next sweeps, and a backlog that is truly queued
 * costs no more than this.
 */
export const SETTLED_CHECKS_PER_POOL = 10;

const emptyReport = (): GitHubSweepReport => ({ scopes: 0, ours: 0, owned: 0, removed: [], skipped: [], failed: [], requeued: [] });
/** A registration in `untrackedSince`: names are unique per scope, and GitHub compares them without case. */
const untrackedKey = (scope: string, name: string): string => `${scope} ${name.toLowerCase()}`;
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const NAMES_PER_QUERY = 100;

/**
 * The pool workflow names its runners `<prefix or pool name, first 50 characters>-<10 hex>`
 * (workflows/pool-book.ts) and registers them with the pool's labels and this installation's.
 * Another installation's pool of the same name registers runners that look the same but for
 * that last label, and this one's workflows cannot know them.
 */
export function registrationMatcher(settings: Pick<PoolSettings, 'name' | 'runnerPrefix' | 'labels'>, controllerId: string): (runner: GitHubRunner) => boolean {
  const base = (settings.runnerPrefix ?? settings.name).slice(0, 50);
  const pattern = new RegExp(`^${escapeRegExp(base)}-[0-9a-f]{10}$`, 'i');
  const wanted = [...settings.labels, controllerLabel(controllerId)].map((l) => l.toLowerCase()).filter((l) => l !== 'self-hosted');
  return (runner) => {
    if (!pattern.test(runner.name)) return false;
    const have = new Set(runner.labels.map((l) => l.toLowerCase()));
    return wanted.every((l) => have.has(l));
  };
}

export function createGitHubSweepActivities(deps: GitHubSweepDeps) {
  const now = deps.now ?? Date.now;
  const client = deps.client.options.namespace === deps.namespace ? deps.client : new Client({ connection: deps.client.connection, namespace: deps.namespace });
  const pools = { fetch: () => new PoolDirectory(client, 0, activityTaskQueue()).fetch() };
  const queryTimeoutMs = deps.queryTimeoutMs ?? 5_000;
  const lostJobs = createLostJobSearch({ client, github: deps.github, ...(deps.jobs ? { jobs: deps.jobs } : {}), pools, now, queryTimeoutMs });
  /** A pool whose worker is gone would hold a query until the server gives up on it. */
  const poolState = (workflowId: string) => client.withDeadline(Date.now() + queryTimeoutMs, () => client.workflow.getHandle(workflowId).query(poolStateQuery));

  async function scopeGroups(provider: string, report: GitHubSweepReport): Promise<{ groups: ScopeGroup[]; poolNames: string[]; swept: SweptPool[] }> {
    const groups = new Map<string, ScopeGroup>();
    const poolNames: string[] = [];
    const swept: SweptPool[] = [];
    for (const entry of await pools.fetch()) {
      // A pool without a memo yet is seconds old and has no orphans; skipping it also avoids querying pools no worker serves.
      if (!entry.memo || entry.memo.provider !== provider) continue;
      // The memo names the credentials and the runner prefix: a pool is asked only when an older memo does not.
      let settings: SweptSettings | undefined = settingsFromMemo(entry);
      let view: PoolView | undefined;
      if (!settings) {
        try {
          view = await poolState(entry.workflowId);
        } catch (err) {
          report.failed.push({ target: `pool ${entry.name}`, error: reportErrorText(err) });
          continue;
        }
        if (view.settings.provider !== provider) continue;
        settings = view.settings;
      }
      poolNames.push(settings.name);
      swept.push({ name: entry.name, workflowId: entry.workflowId, memo: entry.memo, ...(view ? { view } : {}) });
      const key = `${settings.github.credentials}|${scopeKey(settings.github.scope)}`;
      const group = groups.get(key) ?? { credentials: settings.github.credentials, scope: settings.github.scope, pools: [] };
      group.pools.push({
        name: settings.name,
        workflowId: entry.workflowId,
        matches: registrationMatcher(settings, deps.controllerId),
        webhookJobs: settings.mode !== 'scaleSet',
        ...(entry.memo.glance ? { glance: entry.memo.glance } : {}),
      });
      groups.set(key, group);
    }
    return { groups: [...groups.values()], poolNames, swept };
  }

  async function runningRunnerNames(poolNames: string[]): Promise<Set<string>> {
    const names = new Set<string>();
    for (let i = 0; i < poolNames.length; i += NAMES_PER_QUERY) {
      const query = andQuery([
        `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
        `ExecutionStatus = 'Running'`,
        `${RUNNER_POOL.name} IN (${poolNames.slice(i, i + NAMES_PER_QUERY).map(quote).join(', ')})`,
      ]);
      for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
        const name = info.typedSearchAttributes.get(RUNNER_NAME);
        if (name) names.add(name.toLowerCase());
      }
    }
    return names;
  }

  /** Strongly consistent, unlike visibility: a runner started a moment ago is not taken for an orphan. */
  async function ownerOf(name: string): Promise<{ running: true } | { running: false; closedAt?: number }> {
    try {
      const desc = await client.workflow.getHandle(runnerWorkflowId(name)).describe();
      if (desc.status.name === 'RUNNING') return { running: true };
      return { running: false, ...(desc.closeTime ? { closedAt: desc.closeTime.getTime() } : {}) };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { running: false };
      throw err;
    }
  }

  /**
   * `untrackedSince`: when earlier sweeps first found each registration with no workflow
   * (absent: the first finding is now). The ones still so are written to the report's.
   */
  async function sweepScope(group: ScopeGroup, running: Set<string>, gracePeriodMs: number, report: GitHubSweepReport, untrackedSince: Record<string, number> = {}): Promise<void> {
    const gh = deps.github.get(group.credentials);
    const scope = scopeKey(group.scope);
    const registered = await gh.listRunners(group.scope);
    report.scopes += 1;
    for (const runner of registered) {
      if (!group.pools.some((p) => p.matches(runner))) continue;
      report.ours += 1;
      if (running.has(runner.name.toLowerCase())) {
        report.owned += 1;
        continue;
      }
      if (runner.busy) {
        report.skipped.push({ name: runner.name, reason: 'busy at GitHub' });
        continue;
      }
      try {
        const owner = await ownerOf(runner.name);
        if (owner.running) {
          report.owned += 1;
          continue;
        }
        // No workflow at all: it closed so long ago that retention dropped it (or it never existed), so
        // there is no clock to wait on. An online one still has a machine: the machine sweep takes
        // that after its own grace period, and the registration goes on the next run.
        if (owner.closedAt === undefined && runner.status === 'online') {
          report.skipped.push({ name: runner.name, reason: 'online with no workflow: waits for its machine to be swept' });
          continue;
        }
        const reason: RegistrationSweepReason = owner.closedAt === undefined ? 'untracked' : 'orphaned';
        // An orphan's clock starts when its workflow closed. One with no workflow at all (retention
        // dropped it long ago, it never had one, or it is not ours after all) has none: its clock
        // starts at the first finding. Another installation left with the same controllerId
        // registers runners of the same naming and labels, and one of them still booting looks
        // exactly like this; it comes online within minutes, so the grace period spares it.
        const key = untrackedKey(scope, runner.name);
        const since = owner.closedAt ?? untrackedSince[key] ?? now();
        const ageMs = now() - since;
        if (ageMs < gracePeriodMs) {
          const seconds = (ms: number): number => Math.round(ms / 1000);
          if (owner.closedAt === undefined) {
            (report.untrackedSince ??= {})[key] = since;
            report.skipped.push({ name: runner.name, reason: `untracked, first found ${seconds(ageMs)} s ago, inside the ${seconds(gracePeriodMs)} s grace period` });
          } else {
            report.skipped.push({ name: runner.name, reason: `orphaned for ${seconds(ageMs)} s, inside the ${seconds(gracePeriodMs)} s grace period` });
          }
          continue;
        }
        const outcome = await gh.removeRunner({ scope: group.scope, name: runner.name, runnerId: runner.id });
        if (outcome === 'busy') {
          report.skipped.push({ name: runner.name, reason: 'busy at GitHub' });
          continue;
        }
        report.removed.push({ name: runner.name, scope, reason });
        log.info('sweep removed runner registration', { name: runner.name, scope, reason, outcome });
      } catch (err) {
        report.failed.push({ target: runner.name, error: reportErrorText(err) });
      }
    }
  }

  /**
   * A job whose `in_progress` and `completed` events both never reached runnerflow (lost, or
   * failed with no redelivery left) stays queued in its pool until the queue's time limit (a
   * day): it counts as demand, so the pool keeps a runner idle for a job that has long run
   * elsewhere. A runner idle beside a job queued longer than `lostJobAgeMs` is the sign: GitHub
   * hands a queued job to an idle runner with its labels within seconds. Only such pools'
   * oldest jobs are looked up, so a pool working through a real backlog (every runner busy)
   * costs no call. A job GitHub has started, finished or no longer has leaves the pool's
   * queue as its webhook would have taken it out.
   */
  async function dequeueSettledJobs(swept: SweptPool[], lostJobAgeMs: number, report: GitHubSweepReport): Promise<void> {
    for (const { name, workflowId, memo, view: known } of swept) {
      if (memo.deleting || !memo.enabled || memo.mode === 'scaleSet') continue;
      // A glance with no idle runner or no queued job says there is nothing to look at: the pool is not asked.
      if (!known && memo.glance && (memo.glance.queuedJobs === 0 || (memo.glance.agents.idle ?? 0) === 0)) continue;
      let view: PoolView;
      try {
        view = known ?? (await poolState(workflowId));
      } catch (err) {
        report.failed.push({ target: `pool ${name}`, error: reportErrorText(err) });
        continue;
      }
      const settings = view.settings;
      if (view.deleting || !settings.enabled || settings.mode === 'scaleSet') continue;
      if (!view.runners.some((r) => r.runnerStatus === 'idle' && r.status === 'running')) continue;
      const old = view.queuedJobs.filter((job) => job.queuedAt !== undefined && now() - Date.parse(job.queuedAt) >= lostJobAgeMs).slice(0, SETTLED_CHECKS_PER_POOL);
      for (const job of old) {
        const scope = repositoryScope(job.repository, settings.github.scope);
        if (!scope) continue;
        try {
          // Inside the try: credentials this worker no longer has fail this pool's look, not the sweep.
          const status = await deps.github.get(settings.github.credentials).getJobStatus(scope, job.jobId);
          if (status === 'queued' || status === 'waiting' || status === 'requested' || status === 'pending') continue;
          await client.workflow.getHandle(workflowId).signal(jobProgressSignal, { jobId: job.jobId, action: status === 'in_progress' ? 'in_progress' : 'completed' });
          (report.dequeued ??= []).push({ pool: settings.name, jobId: job.jobId, status: status ?? 'gone' });
          log.info('sweep took out of its pool a job GitHub no longer has queued', { pool: settings.name, jobId: job.jobId, status: status ?? 'gone', queuedAt: job.queuedAt });
        } catch (err) {
          report.failed.push({ target: `queued job ${job.jobId} of pool ${settings.name}`, error: reportErrorText(err) });
          // A rate limit or an outage answers the pool's next lookups the same way: they wait for the next sweep.
          break;
        }
      }
    }
  }

  return {
    /**
     * A deleted pool's last step, once none of its runners is left: registrations
     * of its naming in its scope that no running workflow owns are removed now,
     * with no grace period (the pool made all of them and waited for every
     * runner to end). The sweep cannot do it later: it only looks at the scopes
     * of pools that exist. Busy ones (a dead machine's job GitHub has not given
     * up yet) are left and named, for the pool to ask again.
     */
    async removePoolRegistrations({ settings }: RemovePoolRegistrationsArgs): Promise<PoolRegistrationsReport> {
      const report = emptyReport();
      const group: ScopeGroup = {
        credentials: settings.github.credentials,
        scope: settings.github.scope,
        // Only its registrations are looked at: no look for lost jobs.
        pools: [{ name: settings.name, matches: registrationMatcher(settings, deps.controllerId), webhookJobs: false }],
      };
      await sweepScope(group, new Set(), 0, report);
      return {
        removed: report.removed.map((r) => r.name),
        left: report.skipped.map((s) => `${s.name}: ${s.reason}`),
        failed: report.failed.map((f) => `${f.target}: ${f.error}`),
      };
    },

    async sweepGitHubRunners(args: GitHubSweepArgs): Promise<GitHubSweepReport> {
      const report = emptyReport();
      const { groups, poolNames, swept } = await scopeGroups(args.provider, report);
      if (groups.length === 0) return report;
      const running = await runningRunnerNames(poolNames);
      const carried = args.untrackedSince ?? {};
      for (const group of groups) {
        try {
          await sweepScope(group, running, args.gracePeriodMs, report, carried);
        } catch (err) {
          // One scope failing (rate limit, revoked credentials) must not stop the others.
          report.failed.push({ target: scopeKey(group.scope), error: reportErrorText(err) });
          // Nor restart its clocks: what it had found is carried on as it was.
          const prefix = untrackedKey(scopeKey(group.scope), '');
          for (const [key, since] of Object.entries(carried)) if (key.startsWith(prefix)) (report.untrackedSince ??= {})[key] = since;
        }
      }
      if (args.lostJobAgeMs !== undefined) {
        await lostJobs.requeueLostJobs(
          groups,
          {
            lostJobAgeMs: args.lostJobAgeMs,
            lostJobRepositories: args.lostJobRepositories ?? 0,
            lostJobRound: args.lostJobRound ?? 0,
            repositoryRound: args.repositoryRound ?? {},
            unreadable: args.unreadable ?? {},
          },
          args.lostJobRotation ?? {},
          report,
        );
        await dequeueSettledJobs(swept, args.lostJobAgeMs, report);
        // What operators alert on: webhooks that keep going missing (a proxy dropping them, GitHub's own trouble).
        sweepLostWebhookJobs.inc({ provider: args.provider, webhook: 'queued' }, report.requeued.length);
        sweepLostWebhookJobs.inc({ provider: args.provider, webhook: 'in_progress_or_completed' }, report.dequeued?.length ?? 0);
      }
      return report;
    },
  };
}

export type GitHubSweepActivities = ReturnType<typeof createGitHubSweepActivities>;

type RepoScope = Extract<GitHubScope, { kind: 'repo' }>;

/** The repository a queued job belongs to, as a scope to look it up in; an organisation pool's jobs name theirs. */
function repositoryScope(repository: string | undefined, poolScope: GitHubScope): RepoScope | undefined {
  return repoScopeOf(repository) ?? (poolScope.kind === 'repo' ? poolScope : undefined);
}
