/**
 * The orphan and leak sweep: deletes machines of one provider that no running
 * runnerInstance workflow owns any more, once they have been orphaned for the
 * grace period. This is how machines left behind by a forced delete (RunnerLeaked),
 * a terminated workflow or a crash between create and record finally go away.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { log } from '@temporalio/activity';
import { PoolDirectory } from '../api/pool-directory';
import { eachConcurrently } from '../domain/concurrency';
import { andQuery, quote } from '../api/temporal/visibility';
import { sweepDeleted, sweepLastRun, sweepMachines, sweepRuns } from '../observability/metrics';
import { scopeKey, type GitHubPort } from '../github/port';
import { takesPoolExtraSpecs } from '../providers/external/provider';
import { isNotFound, listMachines, ProviderError, type ProviderCallContext, type ProviderInstance, type ProviderPort } from '../providers/port';
import { MACHINE_CLEANUP_WORKFLOW } from '../workflows/cleanup-messages';
import type { InstanceMemo } from '../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW, instanceNameFromWorkflowId, runnerWorkflowId } from '../workflows/messages';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER } from '../workflows/search-attributes';
import { poolStateQuery, poolWorkflowId } from '../workflows/pool-messages';
import { FAILURE_TYPES, reportErrorText, toActivityFailure } from './failures';
import type { GitHubSweepReport } from './github-sweep-activities';
import { whileHeartbeating } from './heartbeat';
import { extraSpecsKey, listPoolsWithSpecs, RunnerExtraSpecs, type PoolListingRequest } from './instance-activities';
import { githubCallsBusy } from './remove-runner';

export interface SweepArgs {
  provider: string;
  /** How long a machine (or GitHub registration) must have been without an owner before it is deleted. */
  gracePeriodMs: number;
  /** Also remove GitHub registrations of this provider's pools that no workflow owns (activities/github-sweep-activities.ts). */
  githubRunners?: boolean;
  /** With githubRunners: route again jobs queued at GitHub this long that no pool knows (lost `queued` webhooks). */
  lostJobAgeMs?: number;
  /** With lostJobAgeMs: for organisation pools, the repositories lately queued from looked into per sweep and organisation. */
  lostJobRepositories?: number;
  /** With lostJobAgeMs: for organisation pools, the repositories looked into in turn per sweep and organisation. */
  lostJobRound?: number;
  /** The schedule's interval: how far back closed runners' pools are listed depends on it (5 min when absent). */
  intervalMs?: number;
}

/** leaked: its workflow's forced delete failed; orphaned: its workflow ended without deleting it; untracked: no workflow ever knew it. */
export type SweepReason = 'leaked' | 'orphaned' | 'untracked';

/** The sweep workflow's result, shown in the Web UI: only the machines the sweep had to think about. */
export interface SweepReport {
  provider: string;
  listed: number;
  owned: number;
  deleted: { name: string; providerId: string; reason: SweepReason }[];
  skipped: { name: string; reason: string }[];
  /** Machines that could not be deleted, and pools (`pool <id>`) a provider that lists per pool could not list. */
  failed: { name: string; error: string }[];
  /** The GitHub side, when the sweep was asked to look there. */
  github?: GitHubSweepReport;
}

export interface SweepActivityDeps {
  controllerId: string;
  providers: ReadonlyMap<string, ProviderPort>;
  client: Client;
  /** The namespace the runner workflows live in. */
  namespace: string;
  /** Epoch ms; tests move time instead of waiting out grace periods. */
  now?: () => number;
  /** Upper bound for one provider delete (default 2 minutes). */
  deleteTimeoutMs?: number;
  /** Asked whether an orphaned machine's runner is busy before the machine is deleted. */
  github?: { get(credentials: string): GitHubPort };
}

/** What visibility remembers of the last closed workflow of a runner name. */
interface ClosedRunner {
  closedAt: number;
  leaked: boolean;
  /** Where the runner registered (its memo), so GitHub can be asked whether it is busy. */
  github?: InstanceMemo['github'];
}

const NAMES_PER_QUERY = 100;
const MAX_ERROR_LENGTH = 500;
/** How long a pool gets to answer for its settings before its listing goes without its extra specs. */
const POOL_QUERY_TIMEOUT_MS = 5_000;
const SPEC_READS_AT_ONCE = 20;
/**
 * How far back a provider that lists per pool has its pools of closed runners listed: a machine
 * such a runner left is deleted by the first sweep after the grace period that lists its pool,
 * so a few grace periods and sweep intervals (and at least an hour) leave room for sweeps that
 * fail or find the provider down, without reading every runner the namespace still remembers.
 */
const CLOSED_LOOKBACK_ROUNDS = 3;
const MIN_CLOSED_LOOKBACK_MS = 3_600_000;
/** The configured default, for a sweep started without the interval (by hand). */
const DEFAULT_SWEEP_INTERVAL_MS = 5 * 60_000;

/** Pools to list, each with the runners known to have made machines in it. */
type PoolMembers = Map<string, Set<string>>;

function addMember(members: PoolMembers, pool: string, name: string | undefined): void {
  const names = members.get(pool) ?? new Set<string>();
  if (name) names.add(name);
  members.set(pool, names);
}

/** A machine as listed, with the extra specs of the listing that showed it. */
interface Listed {
  machine: ProviderInstance;
  extraSpecs?: Record<string, unknown>;
}

export function createSweepActivities(deps: SweepActivityDeps) {
  const now = deps.now ?? Date.now;
  // The sweep must look where the runner workflows are, whatever namespace the given client was made for.
  const client = deps.client.options.namespace === deps.namespace ? deps.client : new Client({ connection: deps.client.connection, namespace: deps.namespace });
  const runnerSpecs = new RunnerExtraSpecs();

  /** The running runners' names, and the pools their machines were created in with the runners of each. */
  async function runningRunners(provider: string): Promise<{ names: Set<string>; pools: PoolMembers }> {
    const query = andQuery([
      `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
      `ExecutionStatus = 'Running'`,
      `${RUNNER_PROVIDER.name} = ${quote(provider)}`,
    ]);
    const names = new Set<string>();
    const pools: PoolMembers = new Map();
    for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
      const name = info.typedSearchAttributes.get(RUNNER_NAME) ?? instanceNameFromWorkflowId(info.workflowId);
      if (name) names.add(name);
      const pool = info.typedSearchAttributes.get(RUNNER_POOL);
      if (pool) addMember(pools, pool, name);
    }
    return { names, pools };
  }

  /**
   * The pools to list on a provider that lists per pool: those of its running runners, of
   * the running pools that use it, of its runners that closed within the look-back (see
   * closedLookbackMs), and of the machines a clean-up still marks leaked. A runner that
   * completed unmarked counts too: a provider can answer a delete as done and keep the
   * machine, and once its pool is gone nothing else would ever list that pool again.
   * Earlier runs of a runner that continued as new are left out: the runner's current run
   * stands for them.
   *
   * Not covered: machines in a pool that no longer runs whose runners all closed before the
   * look-back and left none marked leaked: a machine whose create finished only after its
   * runner's clean-up delete (a race the provider has to lose, in a pool since deleted), a
   * machine every sweep since failed to list or delete, or one of a runner visibility has
   * forgotten (past retention). GARM, listing per pool as well, cannot see them either;
   * finding them would take reading every runner this provider ever had on every sweep.
   */
  async function poolsToList(provider: string, runningPools: PoolMembers, lookbackMs: number): Promise<PoolMembers> {
    const pools: PoolMembers = new Map([...runningPools].map(([pool, names]) => [pool, new Set(names)]));
    for (const entry of await new PoolDirectory(client, 0).fetch()) {
      if (entry.memo?.provider === provider) addMember(pools, entry.name, undefined);
    }
    const closedSince = quote(new Date(now() - lookbackMs).toISOString());
    // A clean-up retries for as long as the provider refuses, maybe longer than the look-back,
    // and one that was stopped keeps its mark: either way its machine may still be there.
    const query = andQuery([
      `${RUNNER_PROVIDER.name} = ${quote(provider)}`,
      `((WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)} AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew' AND CloseTime > ${closedSince})` +
        ` OR (WorkflowType = ${quote(MACHINE_CLEANUP_WORKFLOW)} AND ${RUNNER_LEAKED.name} = true AND (ExecutionStatus = 'Running' OR CloseTime > ${closedSince})))`,
    ]);
    for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
      const pool = info.typedSearchAttributes.get(RUNNER_POOL);
      if (pool) addMember(pools, pool, info.typedSearchAttributes.get(RUNNER_NAME) ?? instanceNameFromWorkflowId(info.workflowId));
    }
    return pools;
  }

  /** How far back closed runners' pools are listed: a few rounds of grace period and sweep interval. */
  function closedLookbackMs(args: SweepArgs): number {
    return Math.max(MIN_CLOSED_LOOKBACK_MS, CLOSED_LOOKBACK_ROUNDS * (args.gracePeriodMs + (args.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS)));
  }

  /**
   * The listings of a provider handed the pool's extra specs: each pool with the extra specs
   * its known runners' machines were made with (see RunnerExtraSpecs), once per distinct
   * value. A pool no known runner made a machine in is listed with its current settings, as
   * the pool answers them; one that does not answer in time is listed without.
   */
  async function listingRequests(pools: PoolMembers): Promise<PoolListingRequest[]> {
    const requests = new Map<string, PoolListingRequest>();
    const add = (poolId: string, extraSpecs: Record<string, unknown> | undefined) => {
      requests.set(`${poolId}\0${extraSpecsKey(extraSpecs)}`, { poolId, ...(extraSpecs ? { extraSpecs } : {}) });
    };
    const reads: (() => Promise<void>)[] = [];
    for (const [pool, names] of pools) {
      if (names.size === 0) reads.push(async () => add(pool, await currentPoolExtraSpecs(pool)));
      for (const name of names) reads.push(async () => add(pool, await runnerSpecs.of(client, name)));
    }
    await eachConcurrently(reads, SPEC_READS_AT_ONCE, (read) => read());
    return [...requests.values()].sort((a, b) => a.poolId.localeCompare(b.poolId));
  }

  async function currentPoolExtraSpecs(pool: string): Promise<Record<string, unknown> | undefined> {
    try {
      const view = await client.withDeadline(Date.now() + POOL_QUERY_TIMEOUT_MS, () => client.workflow.getHandle(poolWorkflowId(pool)).query(poolStateQuery));
      return view.settings.extraSpecs;
    } catch (err) {
      log.warn('pool did not tell its extra specs; listing it without', { pool, error: describeError(err) });
      return undefined;
    }
  }

  /** This controller's machines on the provider, each with the extra specs to delete it with. */
  async function listAll(target: ProviderPort, args: SweepArgs, ctx: ProviderCallContext): Promise<{ machines: Listed[]; failed: { poolId: string; error: unknown }[] }> {
    const pools = target.listsPerPool ? await poolsToList(args.provider, (await runningRunners(args.provider)).pools, closedLookbackMs(args)) : new Map<string, Set<string>>();
    if (!takesPoolExtraSpecs(target)) {
      const listing = await listMachines(target, pools.keys(), ctx);
      return { machines: listing.machines.map((machine) => ({ machine })), failed: listing.failed };
    }
    const listings = await listPoolsWithSpecs(target, await listingRequests(pools), ctx);
    const machines: Listed[] = [];
    const failed: { poolId: string; error: unknown }[] = [];
    const seen = new Set<string>();
    for (const [request, listing] of listings) {
      failed.push(...listing.failed);
      for (const machine of listing.machines) {
        const key = machine.providerId || machine.name;
        if (seen.has(key)) continue;
        seen.add(key);
        machines.push({ machine, ...(request.extraSpecs ? { extraSpecs: request.extraSpecs } : {}) });
      }
    }
    if (listings.size > 0 && failed.length === listings.size) throw failed[0]!.error;
    return { machines, failed };
  }

  /** The most recent closed workflow per name, a bounded batch of names per visibility query. */
  async function lastClosedRunners(provider: string, names: string[]): Promise<Map<string, ClosedRunner>> {
    const found = new Map<string, ClosedRunner>();
    for (let i = 0; i < names.length; i += NAMES_PER_QUERY) {
      const batch = names.slice(i, i + NAMES_PER_QUERY);
      const query = andQuery([
        `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
        `ExecutionStatus != 'Running'`,
        `${RUNNER_PROVIDER.name} = ${quote(provider)}`,
        `${RUNNER_NAME.name} IN (${batch.map(quote).join(', ')})`,
      ]);
      for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
        const name = info.typedSearchAttributes.get(RUNNER_NAME);
        const closedAt = info.closeTime?.getTime();
        if (!name || closedAt === undefined) continue;
        const known = found.get(name);
        const github = (info.memo as Partial<InstanceMemo> | undefined)?.github;
        if (!known || closedAt > known.closedAt) found.set(name, { closedAt, leaked: info.typedSearchAttributes.get(RUNNER_LEAKED) === true, ...(github ? { github } : {}) });
      }
    }
    return found;
  }

  /**
   * Visibility lags behind: a runner started a moment ago may not be listed as running yet.
   * Before deleting, ask for its workflow directly (strongly consistent).
   */
  async function isRunningNow(name: string): Promise<boolean> {
    try {
      const desc = await client.workflow.getHandle(runnerWorkflowId(name)).describe();
      return desc.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /**
   * Why an orphaned machine must stay for now: GitHub says its runner is running a job. A runner
   * workflow terminated by hand leaves its machine and registration as they were, and a busy
   * runner is never killed; once the job is done (an ephemeral runner then leaves GitHub by
   * itself) a later sweep deletes the machine. A GitHub that cannot answer says nothing either
   * way, and the machine waits for a sweep it does answer. A leaked machine is not asked about:
   * a forced delete was asked for, busy or not.
   */
  async function busyAtGitHub(name: string, closed: ClosedRunner | undefined): Promise<string | undefined> {
    if (!deps.github || !closed?.github || closed.leaked) return undefined;
    try {
      return (await githubCallsBusy(deps.github, closed.github, name)) ? `its runner is busy at GitHub (${scopeKey(closed.github.scope)}): deleted once its job is done` : undefined;
    } catch (err) {
      return `GitHub could not say whether its runner is busy: ${describeError(err)}`;
    }
  }

  /** Deletes one machine, unless its workflow turns out to be running after all. A machine already gone counts as deleted. */
  async function remove(target: ProviderPort, { machine, extraSpecs }: Listed, signal: AbortSignal): Promise<'deleted' | 'owned'> {
    if (await isRunningNow(machine.name)) return 'owned';
    try {
      await target.deleteInstance(machine.providerId || machine.name, {
        controllerId: deps.controllerId,
        ...(machine.poolId ? { poolId: machine.poolId } : {}),
        ...(extraSpecs ? { extraSpecs } : {}),
        signal,
        timeoutMs: deps.deleteTimeoutMs ?? 120_000,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return 'deleted';
  }

  async function sweep(target: ProviderPort, args: SweepArgs, signal: AbortSignal): Promise<SweepReport> {
    const listing = await listAll(target, args, { controllerId: deps.controllerId, signal });
    const machines = listing.machines;
    // Read after the listing, so a runner whose machine was listed is seen running if it still is.
    const running = (await runningRunners(args.provider)).names;
    const unowned = machines.filter(({ machine }) => !running.has(machine.name));
    const closed = await lastClosedRunners(args.provider, unowned.map(({ machine }) => machine.name));
    const report: SweepReport = { provider: args.provider, listed: machines.length, owned: machines.length - unowned.length, deleted: [], skipped: [], failed: [] };
    for (const { poolId, error } of listing.failed) report.failed.push({ name: `pool ${poolId}`, error: describeError(error) });

    for (const listed of unowned) {
      const { machine } = listed;
      const verdict = judge(machine, closed.get(machine.name), args.gracePeriodMs, now());
      if ('skip' in verdict) {
        report.skipped.push({ name: machine.name, reason: verdict.skip });
        continue;
      }
      const busy = verdict.reason === 'orphaned' ? await busyAtGitHub(machine.name, closed.get(machine.name)) : undefined;
      if (busy) {
        report.skipped.push({ name: machine.name, reason: busy });
        continue;
      }
      try {
        if ((await remove(target, listed, signal)) === 'owned') {
          report.owned += 1;
          continue;
        }
      } catch (err) {
        // The activity was cancelled: stop here rather than report every remaining machine as failed.
        if (signal.aborted) throw err;
        const error = describeError(err);
        report.failed.push({ name: machine.name, error });
        log.warn('sweep could not delete machine', { provider: args.provider, name: machine.name, reason: verdict.reason, error });
        continue;
      }
      report.deleted.push({ name: machine.name, providerId: machine.providerId, reason: verdict.reason });
      sweepDeleted.inc({ provider: args.provider, reason: verdict.reason });
      log.info('sweep deleted machine', { provider: args.provider, name: machine.name, providerId: machine.providerId, reason: verdict.reason, orphanedForMs: verdict.ageMs });
    }
    return report;
  }

  return {
    async sweepProvider(args: SweepArgs): Promise<SweepReport> {
      const target = deps.providers.get(args.provider);
      if (!target) {
        throw ApplicationFailure.nonRetryable(`provider "${args.provider}" is not configured on this worker`, FAILURE_TYPES.unknownProvider);
      }
      if (!Number.isFinite(args.gracePeriodMs) || args.gracePeriodMs < 0) {
        throw ApplicationFailure.nonRetryable(`gracePeriodMs must be a non-negative number, got ${args.gracePeriodMs}`, 'InvalidSweepArgs');
      }
      try {
        const report = await whileHeartbeating((signal) => sweep(target, args, signal));
        recordSweep(report);
        return report;
      } catch (err) {
        sweepRuns.inc({ provider: args.provider, status: 'error' });
        throw toActivityFailure(err);
      }
    },
  };
}

function recordSweep(report: SweepReport): void {
  const { provider } = report;
  sweepRuns.inc({ provider, status: 'ok' });
  sweepLastRun.set({ provider }, Date.now() / 1000);
  sweepMachines.inc({ provider, status: 'owned' }, report.owned);
  sweepMachines.inc({ provider, status: 'deleted' }, report.deleted.length);
  sweepMachines.inc({ provider, status: 'skipped' }, report.skipped.length);
  sweepMachines.inc({ provider, status: 'failed' }, report.failed.length);
}

type Verdict = { reason: SweepReason; ageMs: number } | { skip: string };

/** Whether an unowned machine has been without an owner for at least the grace period. */
function judge(machine: ProviderInstance, closed: ClosedRunner | undefined, gracePeriodMs: number, now: number): Verdict {
  const createdAt = machine.createdAt ? Date.parse(machine.createdAt) : NaN;
  const created = Number.isNaN(createdAt) ? undefined : createdAt;
  let reason: SweepReason;
  let since: number;
  if (closed) {
    reason = closed.leaked ? 'leaked' : 'orphaned';
    // A machine created after its name's workflow closed belongs to something newer: count from its creation.
    since = Math.max(closed.closedAt, created ?? closed.closedAt);
  } else if (created !== undefined) {
    reason = 'untracked';
    since = created;
  } else {
    return { skip: 'no workflow knew it and the provider reports no creation time' };
  }
  const ageMs = Math.max(0, now - since);
  if (ageMs < gracePeriodMs) return { skip: `${reason} for ${seconds(ageMs)}, inside the ${seconds(gracePeriodMs)} grace period` };
  return { reason, ageMs };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)} s`;
}

function describeError(err: unknown): string {
  let text = err instanceof Error ? err.message : String(err);
  if (err instanceof ProviderError && err.providerMessage && !text.includes(err.providerMessage)) text += `: ${err.providerMessage}`;
  return reportErrorText(text, MAX_ERROR_LENGTH);
}

export type SweepActivities = ReturnType<typeof createSweepActivities>;
