/**
 * The running pools as visibility sees them, with the memo each pool keeps
 * current (labels, priority, enabled, size, provider), plus the pools this
 * process started that visibility does not list yet. Job routing reads it for
 * every queued job, so it is reused for a few seconds; `fresh()` waits for a
 * new read, and callers that need visibility's answer alone call `fetch()`.
 */
import type { Client } from '@temporalio/client';
import { RUNNER_POOL_WORKFLOW, type PoolGlance, type PoolMemo } from '../workflows/pool-messages';
import { andQuery, quote } from './temporal/visibility';
import { githubScopeSchema } from '../domain/pool';
import type { NameSetDigest } from '../domain/name-set-digest';

export interface PoolEntry {
  name: string;
  workflowId: string;
  runId: string;
  startTime: string;
  /** Undefined for a pool that has not written its memo yet. */
  memo?: PoolMemo;
}

const POOL_ID_PREFIX = 'pool/';

function isScaleSetIdentity(value: unknown): value is NonNullable<PoolMemo['scaleSet']> {
  const v = value as Partial<Record<keyof NonNullable<PoolMemo['scaleSet']>, unknown>> | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && typeof v.runnerGroup === 'string' && typeof v.credentials === 'string';
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
const isCountRecord = (value: unknown): value is Record<string, number> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every(isCount);

/** A pool's glance as its memo holds it; undefined for anything else (a memo written by hand, say), which is then asked of the pool. */
function asPoolGlance(value: unknown): PoolGlance | undefined {
  const g = value as Partial<Record<keyof PoolGlance, unknown>> | null;
  if (typeof g !== 'object' || g === null) return undefined;
  const counts = g.counts as Partial<Record<keyof PoolGlance['counts'], unknown>> | undefined;
  if (!counts || ![counts.alive, counts.idle, counts.busy, counts.starting, counts.leaving].every(isCount)) return undefined;
  if (!isCountRecord(g.statuses) || !isCountRecord(g.agents) || ![g.queuedJobs, g.desired, g.minIdleRunners, g.at].every(isCount)) return undefined;
  const { online, started, repositories, ...rest } = g as PoolGlance;
  // A digest that cannot be read only costs its reader the shortcut: the pool is asked.
  return {
    ...rest,
    ...(isNameSetDigest(online) ? { online } : {}),
    ...(isNameSetDigest(started) ? { started } : {}),
    ...(isNameSetDigest(repositories) ? { repositories } : {}),
  };
}

function isNameSetDigest(value: unknown): value is NameSetDigest {
  const d = value as Partial<Record<keyof NameSetDigest, unknown>> | null;
  return typeof d === 'object' && d !== null && isCount(d.count) && typeof d.digest === 'string';
}

function asPoolMemo(memo: Record<string, unknown> | undefined): PoolMemo | undefined {
  if (!memo) return undefined;
  const { labels, priority, enabled, maxRunners, provider, scope, mode, scaleSet, deleting, credentials, runnerPrefix } = memo;
  const glance = asPoolGlance(memo.glance);
  const knownScope = githubScopeSchema.safeParse(scope);
  if (!Array.isArray(labels) || typeof priority !== 'number' || typeof enabled !== 'boolean') return undefined;
  return {
    labels: labels.filter((l): l is string => typeof l === 'string'),
    priority,
    enabled,
    maxRunners: typeof maxRunners === 'number' ? maxRunners : 0,
    provider: typeof provider === 'string' ? provider : '',
    ...(knownScope.success ? { scope: knownScope.data } : {}),
    ...(typeof credentials === 'string' && credentials !== '' ? { credentials } : {}),
    ...(typeof runnerPrefix === 'string' && runnerPrefix !== '' ? { runnerPrefix } : {}),
    // Routing must see it: a scale-set pool takes its jobs from the scale set, never from webhooks.
    ...(mode === 'scaleSet' || mode === 'webhook' ? { mode } : {}),
    // And which jobs are its scale set's: GitHub offers those to its listener, so they are not unmatched.
    ...(mode === 'scaleSet' && isScaleSetIdentity(scaleSet) ? { scaleSet: { name: scaleSet.name, runnerGroup: scaleSet.runnerGroup, credentials: scaleSet.credentials } } : {}),
    ...(deleting === true ? { deleting } : {}),
    ...(glance ? { glance } : {}),
  };
}

/**
 * How long a pool this process started is listed without visibility: the
 * index lags a start (seconds on a busy server), and a job queued for the new
 * pool in that time would be recorded as unmatched and get no runner.
 */
const STARTED_KEPT_MS = 60_000;

export class PoolDirectory {
  /** The list callers are served, and when it was read; replaced only once a newer read is in. */
  private cached?: { at: number; pools: Promise<PoolEntry[]> };
  /** The visibility read under way, shared by everyone who asks meanwhile. */
  private reading?: Promise<PoolEntry[]>;
  /** Bumped by `invalidate`, so a read begun before it is not served after it. */
  private generation = 0;
  private readonly started = new Map<string, { entry: PoolEntry; until: number }>();
  /** Pools this process deleted, until when they are marked deleting whatever visibility says. */
  private readonly deleted = new Map<string, number>();

  constructor(
    private readonly client: Client,
    private readonly ttlMs: number,
    /**
     * The installation's task queue: its pools only. Installations may share a namespace, and a
     * job routed to another's pool waits on that installation's workers (or on none).
     */
    private readonly taskQueue?: string,
  ) {}

  /** Every running pool (of the task queue, when given), straight from visibility. */
  async fetch(): Promise<PoolEntry[]> {
    const query = andQuery([
      `WorkflowType = ${quote(RUNNER_POOL_WORKFLOW)}`,
      `ExecutionStatus = 'Running'`,
      this.taskQueue !== undefined && `TaskQueue = ${quote(this.taskQueue)}`,
    ]);
    const pools: PoolEntry[] = [];
    for await (const info of this.client.workflow.list({ query })) {
      if (!info.workflowId.startsWith(POOL_ID_PREFIX)) continue;
      pools.push({
        name: info.workflowId.slice(POOL_ID_PREFIX.length),
        workflowId: info.workflowId,
        runId: info.runId,
        startTime: info.startTime.toISOString(),
        memo: asPoolMemo(info.memo),
      });
    }
    return pools.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The pools, reused for `ttlMs` (0: read on every call). Past it, the last
   * list is still served while a new one is read: every queued job reads this
   * list, and during a burst a visibility call (tens of milliseconds on a busy
   * server) would otherwise hold up every delivery that arrives while it runs.
   */
  async list(): Promise<PoolEntry[]> {
    const now = Date.now();
    // Nothing to serve yet, or nothing to be reused (a lifetime of 0): wait for a read. Its failure reaches
    // the caller, and the next call reads again.
    if (!this.cached || this.ttlMs <= 0) this.cached = { at: now, pools: this.read() };
    else if (now - this.cached.at > this.ttlMs) this.read().catch(() => undefined);
    return this.withStarted(await this.cached.pools, now);
  }

  /**
   * A list from the visibility read under way, or from one begun now, for a
   * caller that must not act on the served one (a job no listed pool matches
   * may be for a pool created moments ago). Concurrent callers share the read;
   * `list()` callers keep being served the last list until it is in.
   */
  async fresh(): Promise<PoolEntry[]> {
    return this.withStarted(await this.read(), Date.now());
  }

  private read(): Promise<PoolEntry[]> {
    if (this.reading) return this.reading;
    const at = Date.now();
    const generation = this.generation;
    const pools = this.fetch();
    this.reading = pools;
    pools.then(
      () => {
        if (this.generation === generation) this.cached = { at, pools };
      },
      () => {
        // A failed first read is not kept; after a failed re-read the last list still serves.
        if (this.cached?.pools === pools) this.cached = undefined;
      },
    );
    const done = (): void => {
      if (this.reading === pools) this.reading = undefined;
    };
    pools.then(done, done);
    return pools;
  }

  /**
   * Pools this process started that visibility does not list yet are listed anyway; pools it
   * deleted are marked so while visibility may not show their mark yet.
   */
  private withStarted(listed: PoolEntry[], now: number): PoolEntry[] {
    if (this.deleted.size > 0) listed = this.markDeleted(listed, now);
    if (this.started.size === 0) return listed;
    const missing: PoolEntry[] = [];
    for (const [workflowId, { entry, until }] of this.started) {
      if (until < now || listed.some((p) => p.workflowId === workflowId)) this.started.delete(workflowId);
      else missing.push(entry);
    }
    return missing.length === 0 ? listed : [...listed, ...missing].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** A pool this process just started (or changed): listed from now on, whatever visibility says yet. */
  poolStarted(entry: PoolEntry): void {
    this.started.set(entry.workflowId, { entry, until: Date.now() + STARTED_KEPT_MS });
    // A pool of the same name created again once the deleted one had closed.
    this.deleted.delete(entry.workflowId);
    this.invalidate();
  }

  /** The memo a started pool carries now, while it is still listed from here. */
  poolChanged(workflowId: string, memo: PoolMemo): void {
    const known = this.started.get(workflowId);
    if (known) known.entry = { ...known.entry, memo };
    this.invalidate();
  }

  /**
   * A pool being deleted: no longer listed from its start here, and marked deleting in the list
   * served until visibility shows the mark the pool writes in its memo.
   */
  poolDeleted(workflowId: string): void {
    this.started.delete(workflowId);
    this.deleted.set(workflowId, Date.now() + STARTED_KEPT_MS);
    this.invalidate();
  }

  private markDeleted(listed: PoolEntry[], now: number): PoolEntry[] {
    for (const [workflowId, until] of this.deleted) if (until < now) this.deleted.delete(workflowId);
    return listed.map((p) => (p.memo && !p.memo.deleting && this.deleted.has(p.workflowId) ? { ...p, memo: { ...p.memo, deleting: true } } : p));
  }

  invalidate(): void {
    this.generation += 1;
    this.cached = undefined;
    this.reading = undefined;
  }
}
