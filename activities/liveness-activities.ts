/**
 * The liveness reconciler: one pass over every running instance of one provider.
 * Its cost is flat in the number of runners: one visibility listing plus ONE
 * provider ListInstances (machine pass; one per pool of the listed runners for a
 * provider that lists per pool), or one paginated list-runners per GitHub scope
 * (GitHub pass), one visibility listing of the pools, and one describe and one query
 * (machine pass) or one query (GitHub pass) per pool whose glance does not name exactly
 * the runners listed for it as online: none for a settled fleet.
 * The machine pass also reads the newest events of each of the provider's pools, and resets a
 * pool whose workflow tasks keep failing on a nondeterminism error (pool-repair.ts); runner
 * workflows the server reports so stuck are terminated (stuck-runners.ts, one query).
 * Only instances found dead, orphaned or uncounted get a signal; a healthy fleet
 * costs no signal, no workflow task and no history event in any instance.
 *
 * Signals are idempotent (an instance keeps its first finding), so a pass killed
 * half-way is simply redone by the next one.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { log } from '@temporalio/activity';
import { andQuery, quote } from '../api/temporal/visibility';
import { machineFinding, runnerFinding, type HealthFinding } from '../domain/liveness';
import { scopeKey, type GitHubPort, type GitHubRunner, type GitHubScope } from '../github/port';
import { takesPoolExtraSpecs } from '../providers/external/provider';
import { listMachines, type ProviderInstance, type ProviderPort } from '../providers/port';
import type { InstanceMemo } from '../workflows/instance-options';
import { deleteSignal, healthReportSignal, instanceNameFromWorkflowId, runnerWorkflowId, RUNNER_INSTANCE_WORKFLOW, stateQuery, type HealthReportArgs } from '../workflows/messages';
import { auditPoolSignal, countedRunnersQuery, poolWorkflowId, registeredRunnersQuery, type PoolGlance } from '../workflows/pool-messages';
import { SCALE_SET_LISTENER_WORKFLOW, scaleSetListenerId } from '../workflows/scale-set-messages';
import { PoolDirectory, type PoolEntry } from '../api/pool-directory';
import { nameSetDigest, sameNameSet } from '../domain/name-set-digest';
import { RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_STATUS } from '../workflows/search-attributes';
import { eachConcurrently } from '../domain/concurrency';
import { livenessFindings, livenessLastRun } from '../observability/metrics';
import { FAILURE_TYPES, reportErrorText, toActivityFailure } from './failures';
import { repairStuckPools, type PoolRepair } from './pool-repair';
import { endStuckRunners, type EndedRunner } from './stuck-runners';
import { whileHeartbeating } from './heartbeat';
import { poolDisagreement, PoolLookRequests, type Disagreement } from './pool-look-requests';
import { extraSpecsKey, listPoolsWithSpecs, RunnerExtraSpecs, type PoolListingRequest } from './instance-activities';

export type LivenessCheck = 'machines' | 'github';

export interface LivenessArgs {
  provider: string;
  check: LivenessCheck;
}

export interface LivenessReport {
  provider: string;
  check: LivenessCheck;
  /** Running instances of this provider that visibility listed. */
  instances: number;
  /** Provider ListInstances calls (machine pass) or GitHub scopes listed (GitHub pass). */
  listings: number;
  signalled: { name: string; finding: HealthFinding }[];
  /** Pooled runners whose pool no longer runs, asked to leave (machine pass). */
  orphaned: { name: string; pool: string }[];
  /** Pooled runners their pool runs without counting them, asked to leave (machine pass). */
  uncounted: { name: string; pool: string }[];
  /** Pools of this provider found stuck on a nondeterminism error and reset (machine pass). */
  repaired?: PoolRepair[];
  /** Runner workflows of this provider the server reports stuck on a nondeterminism error, terminated (machine pass). */
  stuckRunnersEnded?: EndedRunner[];
  failed: { target: string; error: string }[];
  /** Pools asked which of their runners they count (machine pass) or have heard come online (GitHub pass). */
  poolsAsked?: number;
  /** Pools not asked: their glance's digest of the runners that came online matched the listing (domain/name-set-digest.ts). */
  poolsAtGlance?: number;
  /** Pools whose glance disagreed with the listing on two passes running, asked to look for themselves (machine pass; activities/pool-look-requests.ts). */
  poolsAskedToLook?: { pool: string; why: string }[];
}

export interface LivenessActivityDeps {
  controllerId: string;
  providers: ReadonlyMap<string, ProviderPort>;
  github: { get(credentials: string): GitHubPort };
  client: Client;
  namespace: string;
  /** Signals in flight at once, so a mass failure (a whole zone gone) does not flood the frontend. */
  signalConcurrency?: number;
  /** How long a pool may take to say which runners it counts, or a runner how it is (default 5 s). */
  poolQueryTimeoutMs?: number;
  /** How long a pool's workflow tasks fail on nondeterminism before the machine pass resets it (default 1 min). */
  stuckPoolAfterMs?: number;
  /** How often a pool whose glance keeps disagreeing with the listing is asked again to look (default 10 min). */
  poolAskIntervalMs?: number;
}

interface LiveInstance {
  name: string;
  github?: InstanceMemo['github'];
  /** The pool that started it and counts it, if one did. */
  pool?: string;
  /** The pool its machine was created in, whether or not that pool counts it. */
  machinePool?: string;
  /** On its way out (`pending_delete`): only a registration GitHub no longer lists is news to it. */
  leaving?: boolean;
  /** Its instance status as visibility last saw it. */
  status?: string;
}

const MAX_ERROR_LENGTH = 300;

/** The names of the pooled instances, by the pool that started them. */
function namesByPool(instances: readonly LiveInstance[]): Map<string, string[]> {
  const byPool = new Map<string, string[]>();
  for (const { name, pool } of instances) {
    if (!pool) continue;
    const names = byPool.get(pool);
    if (names) names.push(name);
    else byPool.set(pool, [name]);
  }
  return byPool;
}
const errorText = (err: unknown): string => reportErrorText(err, MAX_ERROR_LENGTH);

/** What a machine pass saw of one instance's machine: it, nothing (gone), or `unseen` when the listing that would show it failed. */
type Seen = ProviderInstance | undefined | 'unseen';

export function createLivenessActivities(deps: LivenessActivityDeps) {
  const client = deps.client.options.namespace === deps.namespace ? deps.client : new Client({ connection: deps.client.connection, namespace: deps.namespace });
  const runnerSpecs = new RunnerExtraSpecs();

  /** Asked to look, pass after pass, per provider (activities/pool-look-requests.ts). */
  const lookRequests = new Map<string, PoolLookRequests>();

  /**
   * Instances whose status is one of `statuses` (every open one for `open`). The checks look at
   * `running` ones: `creating` ones are left to their create activity, leaving ones are already
   * on their way out.
   */
  async function listInstances(provider: string, statuses: readonly string[] | 'open'): Promise<LiveInstance[]> {
    const query = andQuery([
      `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
      `ExecutionStatus = 'Running'`,
      `${RUNNER_PROVIDER.name} = ${quote(provider)}`,
      statuses !== 'open' && (statuses.length === 1 ? `${RUNNER_STATUS.name} = ${quote(statuses[0]!)}` : `${RUNNER_STATUS.name} IN (${statuses.map(quote).join(', ')})`),
    ]);
    const found: LiveInstance[] = [];
    for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
      const name = info.typedSearchAttributes.get(RUNNER_NAME) ?? instanceNameFromWorkflowId(info.workflowId);
      if (!name) continue;
      const memo = info.memo as Partial<InstanceMemo> | undefined;
      const machinePool = info.typedSearchAttributes.get(RUNNER_POOL);
      const pool = memo?.pooled ? machinePool : undefined;
      const status = info.typedSearchAttributes.get(RUNNER_STATUS);
      const leaving = status === 'pending_delete';
      found.push({
        name,
        ...(memo?.github ? { github: memo.github } : {}),
        ...(pool ? { pool } : {}),
        ...(machinePool ? { machinePool } : {}),
        ...(leaving ? { leaving } : {}),
        ...(status ? { status } : {}),
      });
    }
    return found;
  }

  /** Runs `work` over `items`, a bounded number at a time, so many pools or a mass finding (a whole zone gone) do not flood the frontend. */
  const inLanes = <T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> => eachConcurrently(items, deps.signalConcurrency ?? 20, work);
  /** Queries are bounded: a workflow whose worker is down would not answer at all. */
  const bounded = <T>(query: () => Promise<T>): Promise<T> => client.withDeadline(Date.now() + (deps.poolQueryTimeoutMs ?? 5_000), query);
  /** Whether a runner is still `running` by its own account (a query waits for its open workflow task). */
  const runsOn = async (name: string): Promise<boolean> => (await bounded(() => client.workflow.getHandle(runnerWorkflowId(name)).query(stateQuery))).status === 'running';
  /** A pool's list of its runners. */
  const askPool = (pool: string, query: typeof countedRunnersQuery, report: LivenessReport): Promise<string[]> => {
    report.poolsAsked = (report.poolsAsked ?? 0) + 1;
    return bounded(() => client.workflow.getHandle(poolWorkflowId(pool)).query(query));
  };

  /**
   * The running pools' glances, from one visibility listing. Asking each pool instead cost a
   * query per pool and pass, and a worker whose cache cannot hold every pool replays each one
   * it is asked about; with hundreds of pools that was most of an idle worker's time. A listing
   * that fails only costs the pass its shortcut.
   */
  async function listPools(report: LivenessReport): Promise<PoolEntry[]> {
    try {
      return await new PoolDirectory(client, 0).fetch();
    } catch (err) {
      log.warn('pools not listed; each pool of the listed runners is asked', { provider: report.provider, error: errorText(err) });
      return [];
    }
  }
  const glancesOf = (pools: readonly PoolEntry[]): Map<string, PoolGlance> => {
    const glances = new Map<string, PoolGlance>();
    for (const entry of pools) if (entry.memo?.glance) glances.set(entry.name, entry.memo.glance);
    return glances;
  };

  /** The workflow ids of the scale-set listeners that run, from one listing; undefined when it fails (nothing is concluded). */
  async function runningListeners(report: LivenessReport): Promise<Set<string> | undefined> {
    const listening = new Set<string>();
    try {
      const query = andQuery([`WorkflowType = ${quote(SCALE_SET_LISTENER_WORKFLOW)}`, `ExecutionStatus = 'Running'`]);
      for await (const info of client.workflow.list({ query })) listening.add(info.workflowId);
    } catch (err) {
      report.failed.push({ target: 'scale set listeners', error: errorText(err) });
      return undefined;
    }
    return listening;
  }

  /**
   * Asks each of this provider's pools whose glance keeps disagreeing with the listing to look
   * for itself (activities/pool-look-requests.ts). `open` is every open runner of the provider,
   * listed before the pools, so a glance can only be newer than the listing it is compared with.
   */
  async function askPoolsToLook(open: readonly LiveInstance[], pools: readonly PoolEntry[], report: LivenessReport): Promise<void> {
    // This provider's pools whose glance has the digest, each with whether it needs a listener.
    const ours = pools.flatMap(({ name, memo }) =>
      memo?.provider === report.provider && memo.glance?.started ? [{ name, glance: memo.glance, needsListener: memo.mode === 'scaleSet' && !memo.deleting }] : [],
    );
    const listening = ours.some((p) => p.needsListener) ? await runningListeners(report) : undefined;
    const byPool = new Map<string, { open: string[]; running: number }>();
    for (const { name, pool, status } of open) {
      if (!pool) continue;
      const listed = byPool.get(pool) ?? { open: [], running: 0 };
      listed.open.push(name);
      if (status === 'running') listed.running += 1;
      byPool.set(pool, listed);
    }
    const disagreements = new Map<string, Disagreement>();
    for (const { name, glance, needsListener } of ours) {
      const listed = byPool.get(name);
      const found = poolDisagreement({
        glance,
        open: listed?.open ?? [],
        listedRunning: listed?.running ?? 0,
        ...(needsListener && listening ? { listenerRuns: listening.has(scaleSetListenerId(name)) } : {}),
      });
      if (found) disagreements.set(name, found);
    }
    let requests = lookRequests.get(report.provider);
    if (!requests) lookRequests.set(report.provider, (requests = new PoolLookRequests(deps.poolAskIntervalMs ?? 10 * 60_000)));
    const asks = requests.toAsk(disagreements, Date.now());
    if (asks.length === 0) return;
    report.poolsAskedToLook = [];
    await inLanes(asks, async ({ pool, why }) => {
      try {
        await client.workflow.getHandle(poolWorkflowId(pool)).signal(auditPoolSignal, { reason: `liveness pass: ${why}` });
        report.poolsAskedToLook!.push({ pool, why });
        log.info('pool asked to look for runners that ended unreported', { provider: report.provider, pool, why });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) report.failed.push({ target: poolWorkflowId(pool), error: errorText(err) });
      }
    });
  }

  /**
   * Whether a pool's glance already says what asking it would: the runners listed for it are
   * exactly the ones it counts and has heard come online. A runner started, ended or come
   * online since the glance was written makes the digests differ, and the pool is asked. A
   * glance that is stale in some other way (the pool dropped a runner a moment ago and has not
   * written it yet) at most delays a finding to a later pass.
   */
  function vouchedByGlance(glance: PoolGlance | undefined, names: readonly string[], report: LivenessReport): boolean {
    if (!sameNameSet(glance?.online, nameSetDigest(names))) return false;
    report.poolsAtGlance = (report.poolsAtGlance ?? 0) + 1;
    return true;
  }

  /**
   * A pool counts its runners and asks them to leave when it is deleted or smaller. A runner
   * it does not count would idle on, unasked and outside `maxRunners`: one whose pool no
   * longer runs, or one that runs again after its pool wrote it off (an operator reset its
   * closed workflow, or a start was retried after the pool gave the name up). One describe
   * per pool, and one query of each pool that runs, not one call per runner. Graceful: a
   * busy runner finishes its job. Visibility is read before the pool is asked, and a pool
   * counts a runner before it starts it, so a runner listed here that its pool does not
   * count is not one still starting.
   */
  async function orphanPass(instances: LiveInstance[], report: LivenessReport, glances: Map<string, PoolGlance>): Promise<void> {
    const byPool = namesByPool(instances);
    const asks: { name: string; pool: string; counted: boolean }[] = [];
    await inLanes([...byPool], async ([pool, names]) => {
      // Listed as running, and counting every runner listed for it: no orphan, nothing uncounted.
      if (vouchedByGlance(glances.get(pool), names, report)) return;
      const handle = client.workflow.getHandle(poolWorkflowId(pool));
      try {
        if ((await handle.describe()).status.name !== 'RUNNING') {
          for (const name of names) asks.push({ name, pool, counted: false });
          return;
        }
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) {
          for (const name of names) asks.push({ name, pool, counted: false });
        } else {
          report.failed.push({ target: poolWorkflowId(pool), error: errorText(err) });
        }
        return;
      }
      let counted: Set<string>;
      try {
        counted = new Set(await askPool(pool, countedRunnersQuery, report));
      } catch (err) {
        // A pool whose worker is down, or busy past the deadline, says nothing either way.
        report.failed.push({ target: poolWorkflowId(pool), error: errorText(err) });
        return;
      }
      for (const name of names) if (!counted.has(name)) asks.push({ name, pool, counted: true });
    });
    await inLanes(asks, async ({ name, pool, counted }) => {
      const reason = counted ? `pool ${pool} does not count this runner` : `pool ${pool} no longer exists`;
      try {
        // A runner's last report reaches its pool from within the workflow task that ends it, a
        // moment before visibility stops listing it as running: the pool has written it off
        // because it is leaving. Its own state tells such a runner from one that runs on.
        if (counted && !(await runsOn(name))) return;
        await client.workflow.getHandle(runnerWorkflowId(name)).signal(deleteSignal, { reason });
        (counted ? report.uncounted : report.orphaned).push({ name, pool });
        log.warn(counted ? 'runner its pool does not count; asked to leave' : 'runner outlived its pool; asked to leave', { provider: report.provider, name, pool });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) report.failed.push({ target: name, error: errorText(err) });
      }
    });
  }

  async function signalAll(reports: { name: string; args: HealthReportArgs }[], report: LivenessReport): Promise<void> {
    await inLanes(reports, async (next) => {
      try {
        await client.workflow.getHandle(runnerWorkflowId(next.name)).signal(healthReportSignal, next.args);
        report.signalled.push({ name: next.name, finding: next.args.finding });
        log.info('liveness finding reported', { provider: report.provider, name: next.name, finding: next.args.finding, detail: next.args.detail });
      } catch (err) {
        // Closed since visibility listed it: nothing left to tell.
        if (err instanceof WorkflowNotFoundError) return;
        report.failed.push({ target: next.name, error: errorText(err) });
      }
    });
  }

  /** What operators alert on: machines dying in numbers, runners their pools lost track of, passes that cannot see. */
  function countPass(report: LivenessReport): void {
    const labels = { provider: report.provider, check: report.check };
    const byFinding = new Map<string, number>();
    for (const { finding } of report.signalled) byFinding.set(finding, (byFinding.get(finding) ?? 0) + 1);
    for (const [finding, n] of byFinding) livenessFindings.inc({ ...labels, finding }, n);
    if (report.orphaned.length > 0) livenessFindings.inc({ ...labels, finding: 'pool_gone' }, report.orphaned.length);
    if (report.repaired && report.repaired.length > 0) livenessFindings.inc({ ...labels, finding: 'pool_reset' }, report.repaired.length);
    if (report.stuckRunnersEnded && report.stuckRunnersEnded.length > 0) livenessFindings.inc({ ...labels, finding: 'runner_stuck' }, report.stuckRunnersEnded.length);
    if (report.uncounted.length > 0) livenessFindings.inc({ ...labels, finding: 'not_counted' }, report.uncounted.length);
    if (report.poolsAskedToLook && report.poolsAskedToLook.length > 0) livenessFindings.inc({ ...labels, finding: 'pool_asked_to_look' }, report.poolsAskedToLook.length);
    if (report.failed.length > 0) livenessFindings.inc({ ...labels, finding: 'failed_call' }, report.failed.length);
    livenessLastRun.set(labels, Date.now() / 1000);
  }

  /**
   * Visibility is read BEFORE the provider: an instance listed as running already had its
   * machine created, so a machine missing from the later listing really is gone.
   */
  async function machinePass(target: ProviderPort, instances: LiveInstance[], report: LivenessReport, signal: AbortSignal): Promise<void> {
    const seen = takesPoolExtraSpecs(target) ? await listWithExtraSpecs(target, instances, report, signal) : await listByPool(target, instances, report, signal);
    const findings: { name: string; args: HealthReportArgs }[] = [];
    for (const { name } of instances) {
      const machine = seen(name);
      if (machine === 'unseen') continue;
      const finding = machine ? machineFinding(machine.status) : 'machine_gone';
      if (!finding) continue;
      const detail = machine ? (machine.providerFault ? `${target.name}: ${machine.providerFault}` : undefined) : `not listed by provider ${target.name}`;
      findings.push({ name, args: { finding, ...(detail ? { detail: detail.slice(0, MAX_ERROR_LENGTH) } : {}) } });
    }
    await signalAll(findings, report);
  }

  /** One listing, or one per pool of the instances for a provider that lists per pool. */
  async function listByPool(target: ProviderPort, instances: LiveInstance[], report: LivenessReport, signal: AbortSignal): Promise<(name: string) => Seen> {
    const listing = await listMachines(target, instances.map((i) => i.machinePool ?? ''), { controllerId: deps.controllerId, signal });
    report.listings += listing.listings;
    for (const { poolId, error } of listing.failed) report.failed.push({ target: `pool ${poolId}`, error: errorText(error) });
    const unlisted = new Set(listing.failed.map((f) => f.poolId));
    const poolOf = new Map(instances.map((i) => [i.name, i.machinePool]));
    const byName = new Map<string, ProviderInstance>(listing.machines.map((m) => [m.name, m]));
    return (name) => {
      const pool = poolOf.get(name);
      // A machine whose pool was not listed is unseen, not gone.
      if (target.listsPerPool && (!pool || unlisted.has(pool))) return 'unseen';
      return byName.get(name);
    };
  }

  /**
   * For a provider handed the pool's extra specs: each pool is listed with the extra specs its
   * instances' machines were made with, and each instance looked for in its own listing. A
   * listing with other extra specs may look in another region or account, where every machine
   * would read as gone. An instance whose extra specs cannot be read is unseen.
   */
  async function listWithExtraSpecs(target: ProviderPort, instances: LiveInstance[], report: LivenessReport, signal: AbortSignal): Promise<(name: string) => Seen> {
    const requests = new Map<string, PoolListingRequest>();
    const requestOf = new Map<string, PoolListingRequest>();
    await inLanes(instances, async ({ name, machinePool }) => {
      if (!machinePool) return;
      let extraSpecs: Record<string, unknown> | undefined;
      try {
        extraSpecs = await runnerSpecs.of(client, name);
      } catch (err) {
        report.failed.push({ target: name, error: `extra specs not read: ${errorText(err)}` });
        return;
      }
      const key = `${machinePool}\0${extraSpecsKey(extraSpecs)}`;
      const request = requests.get(key) ?? { poolId: machinePool, ...(extraSpecs ? { extraSpecs } : {}) };
      requests.set(key, request);
      requestOf.set(name, request);
    });
    const listings = await listPoolsWithSpecs(target, [...requests.values()], { controllerId: deps.controllerId, signal });
    for (const listing of listings.values()) {
      report.listings += listing.listings;
      for (const { poolId, error } of listing.failed) report.failed.push({ target: `pool ${poolId}`, error: errorText(error) });
    }
    const byName = new Map([...listings].map(([request, listing]) => [request, listing.failed.length > 0 ? undefined : new Map(listing.machines.map((m) => [m.name, m]))]));
    return (name) => {
      const request = requestOf.get(name);
      const machines = request && byName.get(request);
      return machines ? machines.get(name) : 'unseen';
    };
  }

  /**
   * Each pool's runners that have come online, a few pools at a time; a pool that does not
   * answer is left out. A pool whose glance vouches for its listed runners is not asked: all of
   * them have come online.
   */
  async function registeredByPool(instances: LiveInstance[], report: LivenessReport, glances: Map<string, PoolGlance>): Promise<Map<string, Set<string>>> {
    const answers = new Map<string, Set<string>>();
    await inLanes([...namesByPool(instances)], async ([pool, names]) => {
      if (vouchedByGlance(glances.get(pool), names, report)) {
        answers.set(pool, new Set(names));
        return;
      }
      try {
        answers.set(pool, new Set(await askPool(pool, registeredRunnersQuery, report)));
      } catch (err) {
        // A pool whose worker is down, or busy past the deadline, says nothing either way.
        report.failed.push({ target: poolWorkflowId(pool), error: errorText(err) });
      }
    });
    return answers;
  }

  /**
   * Of these runners no pool started, those still booting by their own account (`pending` or
   * `installing`). There is no pool to ask, so each is asked itself; only runners the listing
   * found offline or missing are, so a pass stays one query per finding, not per runner. One
   * that does not answer (its worker down) is left in.
   */
  async function bootingWithoutPool(names: string[], report: LivenessReport): Promise<Set<string>> {
    const booting = new Set<string>();
    await inLanes(names, async (name) => {
      try {
        const state = await bounded(() => client.workflow.getHandle(runnerWorkflowId(name)).query(stateQuery));
        if (state.runnerStatus === 'pending' || state.runnerStatus === 'installing') booting.add(name);
      } catch (err) {
        report.failed.push({ target: runnerWorkflowId(name), error: errorText(err) });
      }
    });
    return booting;
  }

  /**
   * One paginated list-runners per GitHub scope (and credentials) these instances register in.
   * A runner that has not come online yet is offline or unlisted at GitHub by nature (its
   * bootstrap timeout covers it), so its pool is asked which of its runners have: one query per
   * pool spares a signal and a workflow task per booting runner per pass, and keeps booting
   * runners out of what the pass reports. A pool that does not answer leaves its runners in.
   * A runner no pool started is asked itself, once the listing has found something.
   */
  async function githubPass(instances: LiveInstance[], report: LivenessReport, glances: Map<string, PoolGlance>): Promise<void> {
    const registered = await registeredByPool(instances, report, glances);
    const notYetOnline = (i: LiveInstance): boolean => i.pool !== undefined && registered.get(i.pool)?.has(i.name) === false;
    const groups = new Map<string, { credentials: string; scope: GitHubScope; names: string[] }>();
    const leavingNames = new Set(instances.filter((i) => i.leaving).map((i) => i.name));
    for (const instance of instances) {
      if (!instance.github || notYetOnline(instance)) continue;
      const key = `${instance.github.credentials}|${scopeKey(instance.github.scope)}`;
      const group = groups.get(key) ?? { credentials: instance.github.credentials, scope: instance.github.scope, names: [] };
      group.names.push(instance.name);
      groups.set(key, group);
    }
    const findings: { name: string; args: HealthReportArgs }[] = [];
    for (const group of groups.values()) {
      let runners: GitHubRunner[];
      try {
        runners = await deps.github.get(group.credentials).listRunners(group.scope);
        report.listings += 1;
      } catch (err) {
        // One scope's failure (rate limit, revoked credentials) must not hide the others' findings.
        report.failed.push({ target: scopeKey(group.scope), error: errorText(err) });
        continue;
      }
      const byName = new Map(runners.map((r) => [r.name.toLowerCase(), r]));
      for (const name of group.names) {
        const runner = byName.get(name.toLowerCase());
        const finding = runner ? runnerFinding(runner.status) : runnerFinding('missing');
        if (!finding || (leavingNames.has(name) && finding !== 'runner_missing')) continue;
        findings.push({ name, args: { finding, detail: `${scopeKey(group.scope)}${runner?.busy ? ', busy' : ''}` } });
      }
    }
    const withoutPool = new Set(instances.filter((i) => i.pool === undefined && !i.leaving).map((i) => i.name));
    const booting = await bootingWithoutPool(findings.filter((f) => withoutPool.has(f.name)).map((f) => f.name), report);
    await signalAll(booting.size > 0 ? findings.filter((f) => !booting.has(f.name)) : findings, report);
  }

  return {
    async reconcileLiveness(args: LivenessArgs): Promise<LivenessReport> {
      const target = deps.providers.get(args.provider);
      if (!target) {
        throw ApplicationFailure.nonRetryable(`provider "${args.provider}" is not configured on this worker`, FAILURE_TYPES.unknownProvider);
      }
      if (args.check !== 'machines' && args.check !== 'github') {
        throw ApplicationFailure.nonRetryable(`check must be "machines" or "github", got ${JSON.stringify(args.check)}`, 'InvalidLivenessArgs');
      }
      try {
        return await whileHeartbeating(async (signal) => {
          // The GitHub pass also looks at runners leaving busy: a lost `completed` webhook would
          // otherwise keep an ephemeral one waiting for a job GitHub has long finished.
          // The machine pass lists every open runner, for the pools' looks (`askPoolsToLook`), and checks the running ones.
          const listed = await listInstances(args.provider, args.check === 'github' ? ['running', 'pending_delete'] : 'open');
          const instances = args.check === 'github' ? listed : listed.filter((i) => i.status === 'running');
          const report: LivenessReport = { provider: args.provider, check: args.check, instances: instances.length, listings: 0, signalled: [], orphaned: [], uncounted: [], failed: [] };
          if (args.check === 'machines') {
            report.repaired = [];
            report.stuckRunnersEnded = [];
            // Whether or not it has runners: a stuck pool starts none.
            await repairStuckPools({ client, namespace: deps.namespace, stuckAfterMs: deps.stuckPoolAfterMs ?? 60_000 }, args.provider, { repaired: report.repaired, failed: report.failed });
            await endStuckRunners(client, args.provider, { stuckRunnersEnded: report.stuckRunnersEnded, failed: report.failed });
          }
          // Listed after the runners: a glance written since the runners' listing can only be newer.
          // The machine pass lists them whatever it found: a pool whose every runner ended unreported has none listed.
          const pools = args.check === 'machines' || instances.some((i) => i.pool !== undefined) ? await listPools(report) : [];
          const glances = glancesOf(pools);
          if (instances.length > 0) {
            if (args.check === 'machines') {
              // Before the provider listing, so a provider that is down does not keep orphans alive.
              await orphanPass(instances, report, glances);
              await machinePass(target, instances, report, signal);
            } else {
              await githubPass(instances, report, glances);
            }
          }
          if (args.check === 'machines') await askPoolsToLook(listed, pools, report);
          countPass(report);
          return report;
        });
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  };
}

export type LivenessActivities = ReturnType<typeof createLivenessActivities>;
