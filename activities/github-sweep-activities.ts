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
 * Cost per run: one visibility listing of pools, one poolState query per pool of this
 * provider, one visibility listing of their running runners, one paginated
 * list-runners per GitHub scope, and a describe and a delete per orphan only. Looking
 * for lost jobs adds, per repository, one listing of its queued runs and the jobs of
 * at most QUEUED_RUNS_PER_SWEEP of them (domain/lost-job-rotation.ts); per organisation, one
 * listing of its repositories most lately pushed to; and, per pool with
 * an idle runner beside old queued jobs, a look at at most SETTLED_CHECKS_PER_POOL of them.
 */
import { Client, QueryNotRegisteredError, WorkflowNotFoundError } from '@temporalio/client';
import { log } from '@temporalio/activity';
import { candidatePools } from '../api/job-routing';
import { PoolDirectory } from '../api/pool-directory';
import { poolsKnowingJobs } from '../api/temporal/known-jobs';
import { andQuery, quote } from '../api/temporal/visibility';
import { repositoriesToLookInto, stillUnreadable, UNREADABLE_LEFT_FOR_MS } from '../domain/lost-job-repositories';
import { QUEUED_RUNS_PER_SWEEP, runsToLookInto, type LostJobRotation } from '../domain/lost-job-rotation';
import type { PoolSettings } from '../domain/pool';
import { controllerLabel, GitHubApiError, scopeKey, type GitHubPort, type GitHubRunner, type GitHubScope, type PushedRepository } from '../github/port';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../workflows/messages';
import { jobProgressSignal, poolStateQuery, recentRepositoriesQuery, type PoolView, type QueuedJob } from '../workflows/pool-messages';
import type { RecentRepository } from '../workflows/recent-repositories';
import { RUNNER_NAME, RUNNER_POOL } from '../workflows/search-attributes';
import { sweepLostWebhookJobs } from '../observability/metrics';
import { reportErrorText } from './failures';
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

interface ScopeGroup {
  credentials: string;
  scope: GitHubScope;
  /** `webhookJobs`: the pool takes its jobs from webhooks; a scale-set pool's come from its listener, so none of them is lost with a webhook. */
  pools: { name: string; workflowId?: string; matches: (runner: GitHubRunner) => boolean; webhookJobs: boolean }[];
}

/** A pool of the swept provider as its state query answered. */
interface SweptPool {
  workflowId: string;
  view: PoolView;
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
  /** A pool whose worker is gone would hold a query until the server gives up on it. */
  const poolState = (workflowId: string) => client.withDeadline(Date.now() + queryTimeoutMs, () => client.workflow.getHandle(workflowId).query(poolStateQuery));

  async function scopeGroups(provider: string, report: GitHubSweepReport): Promise<{ groups: ScopeGroup[]; poolNames: string[]; swept: SweptPool[] }> {
    const groups = new Map<string, ScopeGroup>();
    const poolNames: string[] = [];
    const swept: SweptPool[] = [];
    for (const entry of await pools.fetch()) {
      // A pool without a memo yet is seconds old and has no orphans; skipping it also avoids querying pools no worker serves.
      if (!entry.memo || entry.memo.provider !== provider) continue;
      let view: PoolView;
      try {
        // The memo lacks the credentials and runner prefix; the pool's own state has them.
        view = await poolState(entry.workflowId);
      } catch (err) {
        report.failed.push({ target: `pool ${entry.name}`, error: reportErrorText(err) });
        continue;
      }
      const settings = view.settings;
      if (settings.provider !== provider) continue;
      poolNames.push(settings.name);
      swept.push({ workflowId: entry.workflowId, view });
      const key = `${settings.github.credentials}|${scopeKey(settings.github.scope)}`;
      const group = groups.get(key) ?? { credentials: settings.github.credentials, scope: settings.github.scope, pools: [] };
      group.pools.push({ name: settings.name, workflowId: entry.workflowId, matches: registrationMatcher(settings, deps.controllerId), webhookJobs: settings.mode !== 'scaleSet' });
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
   * A failure named in the report. Looking beyond a pool's own scope (`refusedFor`: the
   * organisation or enterprise the repositories were looked for on behalf of), a 404 or 403 is a
   * refusal: the repository was deleted or renamed since a pool heard from it, or the credentials
   * may not read it (an enterprise's may manage its runners without reading its organisations'
   * repositories). Asking every sweep would only repeat it, so it is left alone a while (carried
   * on in `unreadable`), named once.
   */
  function failedOrRefused(report: GitHubSweepReport, target: string, key: string, err: unknown, refusedFor: string | undefined): void {
    if (refusedFor && err instanceof GitHubApiError && (err.status === 403 || err.status === 404)) {
      (report.unreadable ??= {})[key.toLowerCase()] = now();
      const hours = UNREADABLE_LEFT_FOR_MS / 3_600_000;
      report.failed.push({
        target,
        error: `${reportErrorText(err)} (${key} is gone, or the credentials of ${refusedFor} cannot read it: left alone for ${hours} h, then tried again)`,
      });
    } else report.failed.push({ target, error: reportErrorText(err) });
  }

  /**
   * A job whose `queued` webhook was lost has no runner coming. GitHub lists queued runs only per
   * repository: a repository pool's own, and for an organisation pool the repositories its pools
   * have lately had jobs queued from (`recentRepositories`) or that were lately pushed to, at most
   * `lostJobRepositories` of them, most lately active first, and then `lostJobRound` more of its
   * repositories in turn. For an enterprise pool, the repositories its pools have lately had jobs
   * queued from, in whichever organisation, and then one of their organisations a sweep, in turn,
   * as an organisation pool's (`lookIntoEnterprise`).
   * An organisation's (or enterprise's) repositories share one repository's bound on runs
   * opened (those in turn at least one each), so looking at one costs at most that many calls
   * more than its listings. A job is only
   * handed to routing once it has waited `lostJobAgeMs` and no pool knows it, so a pool that is
   * merely full is not given a second runner for the same job by another pool.
   */
  async function requeueLostJobs(
    sweptGroups: ScopeGroup[],
    args: { lostJobAgeMs: number; lostJobRepositories: number; lostJobRound: number; repositoryRound: Record<string, number>; unreadable: Record<string, number> },
    rotations: Record<string, LostJobRotation>,
    report: GitHubSweepReport,
  ): Promise<void> {
    const sink = deps.jobs;
    if (!sink) return;
    // Scopes only scale-set pools serve have no job a lost webhook could strand: their listeners
    // hear of every job from the scale set, so looking there would cost calls and find none.
    const groups = sweptGroups
      .map((group) => ({ ...group, pools: group.pools.filter((pool) => pool.webhookJobs) }))
      .filter((group) => group.pools.length > 0);
    const stale: QueuedJob[] = [];
    // Only repositories still swept are carried on: a removed pool's entry goes with it. One whose
    // listing failed keeps where it stood.
    const carriedOn: Record<string, LostJobRotation> = {};
    report.lostJobRotation = carriedOn;
    const lookedInto = new Set<string>();
    /** `refusedFor`: see `failedOrRefused`; absent for a repository pool's own repository, whose refusal is its pool's to mend. */
    async function lookInto(credentials: string, scope: RepoScope, maxRuns: number, refusedFor?: string): Promise<number> {
      const key = scopeKey(scope);
      lookedInto.add(key.toLowerCase());
      try {
        const gh = deps.github.get(credentials);
        const before = rotations[key];
        if (before) carriedOn[key] = before;
        const runs = await gh.listQueuedRuns(scope);
        const { picked, rotation } = runsToLookInto(runs, before, now(), args.lostJobAgeMs, maxRuns);
        for (const run of picked) {
          for (const job of await gh.listQueuedJobsOfRun(scope, run.id)) {
            if (now() - Date.parse(job.createdAt) < args.lostJobAgeMs) continue;
            stale.push({ jobId: job.id, runId: job.runId, labels: job.labels, repository: job.repository, queuedAt: job.createdAt });
          }
        }
        carriedOn[key] = rotation;
        return picked.length;
      } catch (err) {
        failedOrRefused(report, `queued jobs of ${key}`, key, err, refusedFor);
        return 0;
      }
    }
    /** Each in turn, sharing one repository's bound: an equal share of what is left, at least one run. */
    async function lookIntoSharing(credentials: string, scopes: RepoScope[], runsLeft: number, refusedFor?: string): Promise<number> {
      for (const [i, scope] of scopes.entries()) runsLeft -= await lookInto(credentials, scope, Math.max(1, Math.floor(runsLeft / (scopes.length - i))), refusedFor);
      return runsLeft;
    }
    /**
     * The organisation's repositories its pools lately had jobs from (`heard`) or that were lately
     * pushed to, the most lately active first, then the next of them in turn. `refusedFor`: the
     * organisation or enterprise looked on behalf of (see `failedOrRefused`).
     */
    async function lookIntoOrganisation(credentials: string, scope: OrgScope, heard: () => Promise<RecentRepository[]>, refusedFor: string): Promise<void> {
      const org = scope.org.toLowerCase();
      const roundKey = `org:${org}`;
      const ofOrg = (repo: RepoScope | undefined): repo is RepoScope => repo !== undefined && repo.owner.toLowerCase() === org;
      /** Looked into this sweep, or refused a while ago. */
      const skipped = () => new Set([...lookedInto, ...Object.keys(report.unreadable ?? {})].map((key) => key.replace(/^repo:/, '')));
      const orgRefused = () => report.unreadable?.[roundKey] !== undefined;
      const [recent, pushed] =
        args.lostJobRepositories > 0
          ? await Promise.all([heard(), orgRefused() ? [] : pushedRepositoriesOf(credentials, scope, args.lostJobRepositories, report, refusedFor)])
          : [[], []];
      // Repository pools of the same repositories were looked into above.
      const picked = repositoriesToLookInto({ org, heard: recent, pushed, lookedInto: skipped(), now: now(), count: args.lostJobRepositories })
        .map(repoScopeOf)
        .filter(ofOrg);
      let runsLeft = QUEUED_RUNS_PER_SWEEP;
      for (const [i, repo] of picked.entries()) {
        if (runsLeft <= 0) {
          // The bound is spent: the rest keep where they stood for the next sweep.
          const key = scopeKey(repo);
          if (rotations[key]) carriedOn[key] = rotations[key];
          continue;
        }
        // An equal share of what is left, so one repository's backlog cannot take every sweep's bound.
        runsLeft -= await lookInto(credentials, repo, Math.max(1, Math.floor(runsLeft / (picked.length - i))), refusedFor);
      }
      if (!rounds) return;
      if (orgRefused()) {
        // Left alone: the round stays where it stood.
        if (args.repositoryRound[roundKey] !== undefined) rounds[roundKey] ??= args.repositoryRound[roundKey];
        return;
      }
      // Then the next of the organisation's repositories in turn, whatever their activity: one with
      // a job queued by a schedule or a dispatch, or past the most lately active, is found too,
      // within as many sweeps as there are pages of them. Each is looked into even when the
      // bound is spent (a run at least): the round has moved past it.
      const skip = skipped();
      const inTurn = (await repositoriesInTurn(credentials, scope, args.lostJobRound, args.repositoryRound, rounds, report, refusedFor)).filter(
        (repo) => ofOrg(repo) && !skip.has(scopeKey(repo).toLowerCase().replace(/^repo:/, '')),
      );
      await lookIntoSharing(credentials, inTurn, runsLeft, refusedFor);
    }
    /**
     * An enterprise's pools take jobs from every organisation in it, and GitHub lists neither the
     * enterprise's organisations nor its repositories: the repositories its pools have lately heard
     * from are where a lost job is looked for first, in whichever organisation. Then, one a sweep
     * and in turn, one of the organisations those repositories belong to is looked into as an
     * organisation pool's is (its pushes, and its repositories in turn), unless an organisation
     * pool looks into it anyway: an enterprise costs a sweep at most the looks of two
     * organisations, however many it has. Whatever its credentials are refused is left alone a
     * while, and carried on so.
     */
    async function lookIntoEnterprise(group: ScopeGroup & { scope: EnterpriseScope }, organisationsLooked: ReadonlySet<string>): Promise<void> {
      const refusedFor = scopeKey(group.scope);
      const heard = await recentRepositoriesOf(group, report);
      const skip = new Set([...lookedInto, ...Object.keys(report.unreadable ?? {})].map((key) => key.replace(/^repo:/, '')));
      const picked = repositoriesToLookInto({ heard, pushed: [], lookedInto: skip, now: now(), count: args.lostJobRepositories })
        .map(repoScopeOf)
        .filter((scope): scope is RepoScope => scope !== undefined);
      await lookIntoSharing(group.credentials, picked, QUEUED_RUNS_PER_SWEEP, refusedFor);
      const organisations = [...new Set(heard.map(([repository]) => repository.split('/')[0]!.toLowerCase()))]
        .filter((org) => org !== '' && !organisationsLooked.has(org))
        .sort();
      if (organisations.length === 0) return;
      // Which organisation's turn it is travels with the rounds, as the enterprise's own entry.
      const turnKey = refusedFor.toLowerCase();
      const carried = args.repositoryRound[turnKey];
      const turn = Number.isSafeInteger(carried) && carried! >= 0 ? carried! % organisations.length : 0;
      (report.repositoryRound ??= {})[turnKey] = (turn + 1) % organisations.length;
      await lookIntoOrganisation(group.credentials, { kind: 'org', org: organisations[turn]! }, async () => heard, refusedFor);
    }

    const unreadable = stillUnreadable(args.unreadable, now());
    if (Object.keys(unreadable).length > 0) report.unreadable = { ...unreadable };
    for (const group of groups) if (group.scope.kind === 'repo') await lookInto(group.credentials, group.scope, QUEUED_RUNS_PER_SWEEP);
    const rounds: Record<string, number> | undefined = args.lostJobRound > 0 ? (report.repositoryRound = {}) : undefined;
    if (args.lostJobRepositories > 0 || rounds) {
      const organisationsLooked = new Set<string>();
      for (const group of groups) {
        if (group.scope.kind !== 'org') continue;
        organisationsLooked.add(group.scope.org.toLowerCase());
        await lookIntoOrganisation(group.credentials, group.scope, () => recentRepositoriesOf(group, report), scopeKey(group.scope));
      }
      for (const group of groups) if (isEnterpriseGroup(group)) await lookIntoEnterprise(group, organisationsLooked);
    }
    if (stale.length === 0) return;
    const entries = (await pools.fetch()).filter((entry) => entry.memo);
    const known = new Set((await poolsKnowingJobs(client, entries, stale.map((job) => job.jobId), queryTimeoutMs)).keys());
    for (const job of stale) {
      if (known.has(job.jobId)) continue;
      // Waiting for its scale set (at its maximum, say), not lost: GitHub offers it to the scale set's listener.
      if (candidatePools(entries, job.labels, job.repository).kind === 'scaleSet') continue;
      try {
        await sink.jobQueued({ ...job, deliveryId: `sweep-${job.jobId}` });
        report.requeued.push({ jobId: job.jobId, repository: job.repository ?? '' });
        log.info('sweep found a queued job no pool knew of', { jobId: job.jobId, repository: job.repository, queuedAt: job.queuedAt });
      } catch (err) {
        report.failed.push({ target: `job ${job.jobId}`, error: reportErrorText(err) });
      }
    }
  }

  /**
   * The next `count` of the organisation's repositories in name order, from the page the last
   * sweep left off at (`rounds` carries the next one on; after the last page, the round starts
   * again). Once per organisation and sweep, whatever its credentials. A listing GitHub refuses
   * is named in the report, and the round stays where it stood.
   */
  async function repositoriesInTurn(
    credentials: string,
    scope: OrgScope,
    count: number,
    carried: Record<string, number>,
    rounds: Record<string, number>,
    report: GitHubSweepReport,
    refusedFor?: string,
  ): Promise<RepoScope[]> {
    const key = `org:${scope.org.toLowerCase()}`;
    if (rounds[key] !== undefined) return [];
    const page = Number.isSafeInteger(carried[key]) && carried[key]! >= 1 ? carried[key]! : 1;
    rounds[key] = page;
    try {
      const listed = await deps.github.get(credentials).listOrgRepositoriesPage(scope, count, page);
      rounds[key] = listed.last ? 1 : page + 1;
      return listed.repositories.map(repoScopeOf).filter((s): s is RepoScope => s !== undefined);
    } catch (err) {
      failedOrRefused(report, `repositories in turn in org:${scope.org}`, key, err, refusedFor);
      return [];
    }
  }

  /**
   * The organisation's repositories most lately pushed to: where a repository's first job for
   * these pools, lost, is found. A listing GitHub refuses is named in the report; the
   * repositories the pools know are looked into all the same.
   */
  async function pushedRepositoriesOf(credentials: string, scope: OrgScope, count: number, report: GitHubSweepReport, refusedFor?: string): Promise<PushedRepository[]> {
    try {
      return await deps.github.get(credentials).listRecentlyPushedRepositories(scope, count);
    } catch (err) {
      failedOrRefused(report, `repositories pushed to in org:${scope.org}`, `org:${scope.org.toLowerCase()}`, err, refusedFor);
      return [];
    }
  }

  /** The repositories the group's pools have lately had jobs queued from, most lately first, each once. */
  async function recentRepositoriesOf(group: ScopeGroup, report: GitHubSweepReport): Promise<RecentRepository[]> {
    const latest = new Map<string, RecentRepository>();
    await Promise.all(
      group.pools.map(async (pool) => {
        if (!pool.workflowId) return;
        const handle = client.workflow.getHandle(pool.workflowId);
        try {
          const repositories = await client.withDeadline(Date.now() + queryTimeoutMs, () => handle.query(recentRepositoriesQuery));
          for (const entry of repositories) {
            const key = entry[0].toLowerCase();
            if ((latest.get(key)?.[1] ?? -1) < entry[1]) latest.set(key, entry);
          }
        } catch (err) {
          // A pool run by an older worker has no such query: it is known from its next run on.
          if (!(err instanceof QueryNotRegisteredError)) report.failed.push({ target: `recent repositories of pool ${pool.name}`, error: reportErrorText(err) });
        }
      }),
    );
    return [...latest.values()].sort((a, b) => b[1] - a[1]);
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
    for (const { workflowId, view } of swept) {
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
        await requeueLostJobs(
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

/** The repository a queued job belongs to, as a scope to look it up in; an organisation pool's jobs name theirs. */
function repositoryScope(repository: string | undefined, poolScope: GitHubScope): RepoScope | undefined {
  return repoScopeOf(repository) ?? (poolScope.kind === 'repo' ? poolScope : undefined);
}

type RepoScope = Extract<GitHubScope, { kind: 'repo' }>;
type OrgScope = Extract<GitHubScope, { kind: 'org' }>;
type EnterpriseScope = Extract<GitHubScope, { kind: 'enterprise' }>;

function isEnterpriseGroup(group: ScopeGroup): group is ScopeGroup & { scope: EnterpriseScope } {
  return group.scope.kind === 'enterprise';
}

/** `owner/name` as a repository scope; anything else is none. */
function repoScopeOf(repository: string | undefined): RepoScope | undefined {
  const [owner, repo, ...rest] = (repository ?? '').split('/');
  return owner && repo && rest.length === 0 ? { kind: 'repo', owner, repo } : undefined;
}
