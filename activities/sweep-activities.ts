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
import { andQuery, quote } from '../api/temporal/visibility';
import { sweepDeleted, sweepLastRun, sweepMachines, sweepRuns } from '../observability/metrics';
import { isNotFound, listMachines, ProviderError, type ProviderInstance, type ProviderPort } from '../providers/port';
import { RUNNER_INSTANCE_WORKFLOW, instanceNameFromWorkflowId, runnerWorkflowId } from '../workflows/messages';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER } from '../workflows/search-attributes';
import { FAILURE_TYPES, toActivityFailure } from './failures';
import type { GitHubSweepReport } from './github-sweep-activities';
import { whileHeartbeating } from './heartbeat';

export interface SweepArgs {
  provider: string;
  /** How long a machine (or GitHub registration) must have been without an owner before it is deleted. */
  gracePeriodMs: number;
  /** Also remove GitHub registrations of this provider's pools that no workflow owns (activities/github-sweep-activities.ts). */
  githubRunners?: boolean;
  /** With githubRunners: route again jobs queued at GitHub this long that no pool knows (lost `queued` webhooks). */
  lostJobAgeMs?: number;
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
}

/** What visibility remembers of the last closed workflow of a runner name. */
interface ClosedRunner {
  closedAt: number;
  leaked: boolean;
}

const NAMES_PER_QUERY = 100;
const MAX_ERROR_LENGTH = 500;

export function createSweepActivities(deps: SweepActivityDeps) {
  const now = deps.now ?? Date.now;
  // The sweep must look where the runner workflows are, whatever namespace the given client was made for.
  const client = deps.client.options.namespace === deps.namespace ? deps.client : new Client({ connection: deps.client.connection, namespace: deps.namespace });

  /** The running runners' names, and the pools their machines were created in. */
  async function runningRunners(provider: string): Promise<{ names: Set<string>; pools: Set<string> }> {
    const query = andQuery([
      `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
      `ExecutionStatus = 'Running'`,
      `${RUNNER_PROVIDER.name} = ${quote(provider)}`,
    ]);
    const names = new Set<string>();
    const pools = new Set<string>();
    for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
      const name = info.typedSearchAttributes.get(RUNNER_NAME) ?? instanceNameFromWorkflowId(info.workflowId);
      if (name) names.add(name);
      const pool = info.typedSearchAttributes.get(RUNNER_POOL);
      if (pool) pools.add(pool);
    }
    return { names, pools };
  }

  /**
   * The pools to list on a provider that lists per pool: those of its running runners,
   * of the running pools that use it, and of its runners that closed without deleting
   * their machine (terminated, failed, timed out, or marked leaked by a forced delete).
   * A runner that completed unmarked deleted its machine, so its pool is left out.
   *
   * Not covered: machines in a pool that no longer runs and has no running or uncleanly
   * closed runner of this provider left in visibility. Such a machine is either one whose
   * create finished only after its runner's clean-up delete (a race the provider has to
   * lose, in a pool since deleted), or one of a runner visibility has forgotten (past
   * retention). GARM, listing per pool as well, cannot see them either; finding them would
   * take reading every runner this provider ever had on every sweep.
   */
  async function poolsToList(provider: string, runningPools: Set<string>): Promise<Set<string>> {
    const pools = new Set(runningPools);
    for (const entry of await new PoolDirectory(client, 0).fetch()) {
      if (entry.memo?.provider === provider) pools.add(entry.name);
    }
    const query = andQuery([
      `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
      `ExecutionStatus != 'Running'`,
      `${RUNNER_PROVIDER.name} = ${quote(provider)}`,
      `(ExecutionStatus != 'Completed' OR ${RUNNER_LEAKED.name} = true)`,
    ]);
    for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
      const pool = info.typedSearchAttributes.get(RUNNER_POOL);
      if (pool) pools.add(pool);
    }
    return pools;
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
        if (!known || closedAt > known.closedAt) found.set(name, { closedAt, leaked: info.typedSearchAttributes.get(RUNNER_LEAKED) === true });
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

  /** Deletes one machine, unless its workflow turns out to be running after all. A machine already gone counts as deleted. */
  async function remove(target: ProviderPort, machine: ProviderInstance, signal: AbortSignal): Promise<'deleted' | 'owned'> {
    if (await isRunningNow(machine.name)) return 'owned';
    try {
      await target.deleteInstance(machine.providerId || machine.name, {
        controllerId: deps.controllerId,
        ...(machine.poolId ? { poolId: machine.poolId } : {}),
        signal,
        timeoutMs: deps.deleteTimeoutMs ?? 120_000,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return 'deleted';
  }

  async function sweep(target: ProviderPort, args: SweepArgs, signal: AbortSignal): Promise<SweepReport> {
    const pools = target.listsPerPool ? await poolsToList(args.provider, (await runningRunners(args.provider)).pools) : [];
    const listing = await listMachines(target, pools, { controllerId: deps.controllerId, signal });
    const machines = listing.machines;
    // Read after the listing, so a runner whose machine was listed is seen running if it still is.
    const running = (await runningRunners(args.provider)).names;
    const unowned = machines.filter((m) => !running.has(m.name));
    const closed = await lastClosedRunners(args.provider, unowned.map((m) => m.name));
    const report: SweepReport = { provider: args.provider, listed: machines.length, owned: machines.length - unowned.length, deleted: [], skipped: [], failed: [] };
    for (const { poolId, error } of listing.failed) report.failed.push({ name: `pool ${poolId}`, error: describeError(error) });

    for (const machine of unowned) {
      const verdict = judge(machine, closed.get(machine.name), args.gracePeriodMs, now());
      if ('skip' in verdict) {
        report.skipped.push({ name: machine.name, reason: verdict.skip });
        continue;
      }
      try {
        if ((await remove(target, machine, signal)) === 'owned') {
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
  return text.slice(0, MAX_ERROR_LENGTH);
}

export type SweepActivities = ReturnType<typeof createSweepActivities>;
