/**
 * The sweep's look for jobs whose `queued` webhook was lost: GitHub lists queued jobs only per
 * repository, so it names the repositories to look into (a repository pool's own; for an
 * organisation or an enterprise, those its pools heard from, those lately pushed to and the rest
 * in turn), opens a bounded number of queued runs in each, and hands a job no pool knows to
 * routing again. What it looked into, and where each round stands, goes back in the sweep's
 * report for the next sweep (workflows/provider-sweep.ts).
 */
import { QueryNotRegisteredError, type Client } from '@temporalio/client';
import { log } from '@temporalio/activity';
import { candidatePools } from '../api/job-routing';
import type { PoolEntry } from '../api/pool-directory';
import { poolsKnowingJobs } from '../api/temporal/known-jobs';
import { repositoriesToLookInto, stillUnreadable, UNREADABLE_LEFT_FOR_MS } from '../domain/lost-job-repositories';
import { QUEUED_RUNS_PER_SWEEP, runsToLookInto, type LostJobRotation } from '../domain/lost-job-rotation';
import { isAccessRefused, scopeKey, type GitHubPort, type GitHubRunner, type GitHubScope, type PushedRepository } from '../github/port';
import type { PoolGlance, QueuedJob } from '../workflows/pool-messages';
import type { RecentRepository } from '../workflows/recent-repositories';
import type { GitHubSweepReport } from './github-sweep-activities';
import { RecentRepositoriesReader } from './recent-repositories-reader';
import { reportErrorText } from './failures';

/** The pools of one set of credentials and one GitHub scope, as the sweep finds them. */
export interface ScopeGroup {
  credentials: string;
  scope: GitHubScope;
  /**
   * `webhookJobs`: the pool takes its jobs from webhooks; a scale-set pool's come from its listener, so none of them is lost with a webhook.
   * `glance`: the pool's glance as the sweep's listing showed it, if it had one (its digest of its recent repositories spares asking for them again).
   */
  pools: { name: string; workflowId?: string; matches: (runner: GitHubRunner) => boolean; webhookJobs: boolean; glance?: PoolGlance }[];
}

export interface LostJobArgs {
  lostJobAgeMs: number;
  lostJobRepositories: number;
  lostJobRound: number;
  repositoryRound: Record<string, number>;
  unreadable: Record<string, number>;
}

export interface LostJobSearchDeps {
  client: Client;
  github: { get(credentials: string): GitHubPort };
  /** The webhook intake's routing (api/temporal-job-sink.ts): a pool takes the job, or it is recorded as unmatched. */
  jobs?: { jobQueued(job: QueuedJob & { deliveryId: string }): Promise<void> };
  /** The running pools, with their memos. */
  pools: { fetch(): Promise<PoolEntry[]> };
  now: () => number;
  /** Bound on each query to a pool. */
  queryTimeoutMs: number;
}

export function createLostJobSearch(deps: LostJobSearchDeps) {
  const { client, now, queryTimeoutMs, pools } = deps;
  /** Each pool's recent repositories, asked again only when its glance shows they changed (or the sweep has just routed a lost job, below). */
  const recent = new RecentRepositoriesReader(client, queryTimeoutMs);

  /**
   * A failure named in the report. Looking beyond a pool's own scope (`refusedFor`: the
   * organisation or enterprise the repositories were looked for on behalf of), a 404 or 403 is a
   * refusal: the repository was deleted or renamed since a pool heard from it, or the credentials
   * may not read it (an enterprise's may manage its runners without reading its organisations'
   * repositories). Asking every sweep would only repeat it, so it is left alone a while (carried
   * on in `unreadable`), named once.
   */
  function failedOrRefused(report: GitHubSweepReport, target: string, key: string, err: unknown, refusedFor: string | undefined): void {
    if (refusedFor && isAccessRefused(err)) {
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
    recent.keepOnly(new Set(sweptGroups.flatMap((group) => group.pools.flatMap((pool) => (pool.workflowId ? [pool.workflowId] : [])))));
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
    /** `owner/name` (lower case) of the repositories looked into this sweep, or refused a while ago: not to look into (again). */
    const notToLookInto = (): Set<string> => new Set([...lookedInto, ...Object.keys(report.unreadable ?? {})].map((key) => key.replace(/^repo:/, '')));
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
      const orgRefused = () => report.unreadable?.[roundKey] !== undefined;
      const [recent, pushed] =
        args.lostJobRepositories > 0
          ? await Promise.all([heard(), orgRefused() ? [] : pushedRepositoriesOf(credentials, scope, args.lostJobRepositories, report, refusedFor)])
          : [[], []];
      // Repository pools of the same repositories were looked into above.
      const picked = repositoriesToLookInto({ org, heard: recent, pushed, lookedInto: notToLookInto(), now: now(), count: args.lostJobRepositories })
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
      const skip = notToLookInto();
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
      const picked = repositoriesToLookInto({ heard, pushed: [], lookedInto: notToLookInto(), now: now(), count: args.lostJobRepositories })
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
        // The pool it goes to hears of its repository now, and the next sweep may come before
        // visibility shows that pool's new glance: it asks the pools again.
        recent.forgetAll();
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
        const { workflowId } = pool;
        if (!workflowId) return;
        try {
          for (const entry of await recent.of(workflowId, pool.glance)) {
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

  return { requeueLostJobs };
}

type RepoScope = Extract<GitHubScope, { kind: 'repo' }>;
type OrgScope = Extract<GitHubScope, { kind: 'org' }>;
type EnterpriseScope = Extract<GitHubScope, { kind: 'enterprise' }>;

function isEnterpriseGroup(group: ScopeGroup): group is ScopeGroup & { scope: EnterpriseScope } {
  return group.scope.kind === 'enterprise';
}

/** `owner/name` as a repository scope; anything else is none. */
export function repoScopeOf(repository: string | undefined): RepoScope | undefined {
  const [owner, repo, ...rest] = (repository ?? '').split('/');
  return owner && repo && rest.length === 0 ? { kind: 'repo', owner, repo } : undefined;
}
