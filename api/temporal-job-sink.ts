/**
 * Turns workflow_job webhooks into workflow signals with as little work as
 * possible before the webhook is answered: GitHub sends a matrix build's
 * hundreds of jobs at once, and each answer waits on this.
 *
 * - queued: routed with the cached pool list, then signalled to the pool
 *   batched (api/signal-batcher.ts): one history event per pool per round trip,
 *   however many jobs arrive. Jobs no pool can take are recorded the same way.
 * - A pool or record that refuses a batch (it is continuing as new) or does not
 *   take it quickly is gone around through a jobRelay workflow, which passes the
 *   jobs on when it can: GitHub's delivery does not wait on one workflow's pause.
 * - in_progress / completed: one signal to the runner the event names. The
 *   runner tells its pool itself (its busy and leaving reports carry the job),
 *   so the pool's history gets no second copy of every job event. Only when
 *   another pool may hold the job (several match its labels, or the runner is
 *   not ours) are the matching pools told too (`jobTaken`).
 */
import type { Client } from '@temporalio/client';
import { poolMatchesLabels, scopeCoversRepository } from '../domain/pool';
import { jobCompletedSignal, jobStartedSignal, runnerWorkflowId, type JobCompletedArgs, type JobStartedArgs } from '../workflows/messages';
import {
  unmatchedJobsWorkflowId,
  jobProgressSignal,
  jobsQueuedSignal,
  poolStateQuery,
  type JobProgressArgs,
  type QueuedJob,
  type UnmatchedJob,
} from '../workflows/pool-messages';
import type { Logger } from './deps';
import type { StuckWorkflowAlarm } from './stuck-workflow-alarm';
import { candidatePools, freeCapacity, freeCapacityOfGlance, mostFree, type RoutableEntry } from './job-routing';
import type { IdleReportHold } from './idle-report-hold';
import type { PoolDirectory } from './pool-directory';
import type { RelayTarget } from '../workflows/relay-messages';
import { jobRelayDetour, type JobRelaySettings } from './job-relay';
import { SignalBatcher, type Detour } from './signal-batcher';
import type { JobTiming, SignalOutcome, WorkflowJobSink } from './webhooks/github';
import { isNotFound } from './temporal/errors';
import { failFastWhenBusy, isBusyWorkflowError } from './temporal/connection';
import { recordUnmatchedJobs } from './temporal/unmatched-record';

export interface TemporalJobSinkDeps {
  client: Client;
  taskQueue: string;
  pools: PoolDirectory;
  /** Told of failed reads of pools (api/stuck-workflow-alarm.ts). */
  stuckWorkflows?: StuckWorkflowAlarm;
  logger: Logger;
  /** Bound on each poolState query used to break priority ties (pools whose memo has no glance). */
  queryTimeoutMs: number;
  /** How long a pool's free capacity, read from the pool to break a priority tie, is reused (jobs routed since are subtracted). */
  capacityCacheMs?: number;
  /** A job no pool matches makes the pool list be read afresh, at most this often. */
  unmatchedRefreshMs?: number;
  /**
   * Jobs a pool (or the unmatched record) has not taken within this long go
   * through a jobRelay workflow instead; absent, the intake waits on the target.
   */
  relay?: JobRelaySettings;
  /** Least time between two batches of jobs to one pool (or the record); see SignalBatcher. */
  paceMs?: number;
  /** Agents' `idle` reports held for a job start to carry (api/idle-report-hold.ts). */
  idleReports?: IdleReportHold;
}

interface KnownCapacity {
  at: number;
  free: number | undefined;
  reading?: Promise<void>;
  /** When the glance `free` was read from was written (the pool's clock); undefined when it was read from the pool. */
  glanceAt?: number;
  /** When jobs were routed to the pool lately, oldest first: those after a glance are not in it. */
  routedAt: number[];
}

/** Routing times kept per pool: a glance that stops moving (its pool's worker down) must not grow the list for good. */
const ROUTED_KEPT = 1_000;

export class TemporalJobSink implements WorkflowJobSink {
  private readonly toPools: SignalBatcher<QueuedJob>;
  private readonly toUnmatched: SignalBatcher<UnmatchedJob>;
  private readonly capacities = new Map<string, KnownCapacity>();
  private refreshedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: TemporalJobSinkDeps) {
    const toPool = (workflowId: string, jobs: QueuedJob[]) => deps.client.workflow.getHandle(workflowId).signal(jobsQueuedSignal, { jobs });
    const toRecord = (workflowId: string, jobs: UnmatchedJob[]) => recordUnmatchedJobs(deps.client, { workflowId, taskQueue: deps.taskQueue }, jobs);
    this.toPools = this.batcher('pool', toPool);
    this.toUnmatched = this.batcher('unmatched', toRecord);
  }

  /**
   * With a relay, a target that refuses signals while its continue-as-new is
   * replayed (a second or two for a busy pool) is told apart at once and gone
   * around; every delivery of that spell would otherwise wait `afterMs` first.
   */
  private batcher<T extends QueuedJob>(kind: RelayTarget['kind'], send: (workflowId: string, items: T[]) => Promise<void>): SignalBatcher<T> {
    const { relay, client, taskQueue, logger, paceMs } = this.deps;
    if (!relay) return new SignalBatcher(send, { paceMs });
    const detour: Detour<T> = {
      ...jobRelayDetour<T>(client, taskQueue, kind, relay, {
        relayed: (target, jobs) => logger.info('jobs relayed: their workflow refused them or did not take them in time', { target, jobs, afterMs: relay.afterMs }),
        failed: (target, jobs, err) => logger.warn('jobs not relayed: waiting for their workflow instead', { target, jobs, error: (err as Error).message }),
      }),
      refused: isBusyWorkflowError,
      waitForTarget: send,
    };
    return new SignalBatcher((workflowId, items) => failFastWhenBusy(() => send(workflowId, items)), { detour, paceMs });
  }

  async jobQueued(job: QueuedJob & { deliveryId: string }): Promise<void> {
    const { deliveryId, ...queued } = job;
    for (let attempt = 0; attempt < 3; attempt++) {
      let candidates = candidatePools(await this.deps.pools.list(), queued.labels, queued.repository);
      // The list may predate a pool created moments ago: look again, fresh, before giving up.
      // One fresh look serves every unmatched job of the next moments, or a burst of them
      // would make a visibility query each; jobs that do match are not held up by it.
      if (candidates.kind === 'none' && Date.now() - this.refreshedAt > (this.deps.unmatchedRefreshMs ?? 1_000)) {
        this.refreshedAt = Date.now();
        candidates = candidatePools(await this.deps.pools.fresh(), queued.labels, queued.repository);
      }
      if (candidates.kind === 'none') {
        await this.recordUnmatched(queued, candidates.reason);
        return;
      }
      if (candidates.kind === 'scaleSet') {
        // GitHub offers it to the scale set's listener: nothing to route, and nothing went unmatched.
        this.deps.logger.info("job left to its scale set's listener", { jobId: queued.jobId, pools: candidates.pools.map((p) => p.name), deliveryId });
        return;
      }
      const pool = await this.pickByCapacity(candidates.pools);
      try {
        await this.toPools.add(pool.workflowId, queued);
        this.deps.logger.info('job routed to pool', { jobId: queued.jobId, pool: pool.name, deliveryId });
        return;
      } catch (err) {
        // The pool ended since the list was read: read it again.
        if (!isNotFound(err)) throw err;
        this.deps.pools.poolDeleted(pool.workflowId);
      }
    }
    await this.recordUnmatched(queued, 'the matching pool ended while the job was routed');
  }

  /** A queued job was cancelled before any runner took it: the pools that could hold it stop counting it. */
  async jobLeftQueue(job: { jobId: number; labels: string[]; deliveryId: string }): Promise<void> {
    const holders = (await this.deps.pools.list()).filter((p) => p.memo && poolMatchesLabels(p.memo, job.labels));
    const progress: JobProgressArgs = { jobId: job.jobId, action: 'completed' };
    await Promise.all(holders.map((pool) => this.progressTo(pool.workflowId, progress)));
  }

  /**
   * A job is routed to one of the pools its labels match, and any runner with those labels may
   * take it: one of another pool, or one runnerflow does not manage. The pool it was routed to
   * would then count it as demand until it expired (a day), keeping a machine for it. Its own
   * runner tells its pool, so with a single matching pool and our runner there is no one else
   * to tell, and this costs nothing; otherwise every matching pool hears the job went.
   */
  async jobTaken(job: { jobId: number; labels: string[]; repository?: string; runnerName: string; ownRunner: boolean; action: 'in_progress' | 'completed' }): Promise<void> {
    const holders = (await this.deps.pools.list()).filter(
      (p) => p.memo && !p.memo.deleting && p.memo.mode !== 'scaleSet' && poolMatchesLabels(p.memo, job.labels) && (!p.memo.scope || scopeCoversRepository(p.memo.scope, job.repository)),
    );
    if (holders.length === 0 || (job.ownRunner && holders.length === 1)) return;
    const progress: JobProgressArgs = { jobId: job.jobId, action: job.action, ...(job.action === 'in_progress' ? { runnerName: job.runnerName } : {}) };
    await Promise.all(holders.map((pool) => this.progressTo(pool.workflowId, progress)));
  }

  /**
   * GitHub's own queued and started times travel with the signal: the runner knows its pool and
   * observes the queue time. The signal also carries the agent's `idle` report, if one is held.
   */
  async jobStarted(runnerName: string, args: JobStartedArgs, timing?: JobTiming): Promise<SignalOutcome> {
    const withTiming: JobStartedArgs = {
      ...args,
      ...(timing?.createdAt ? { queuedAt: timing.createdAt } : {}),
      ...(timing?.startedAt ? { startedAt: timing.startedAt } : {}),
    };
    const carried = this.deps.idleReports?.jobStarting(runnerName);
    let outcome: SignalOutcome;
    try {
      outcome = await this.toRunner(runnerName, (h) => h.signal(jobStartedSignal, withTiming));
    } catch (err) {
      carried?.notDelivered();
      throw err;
    }
    if (outcome === 'signalled') carried?.delivered();
    else carried?.notDelivered();
    return outcome;
  }

  jobCompleted(runnerName: string, args: JobCompletedArgs): Promise<SignalOutcome> {
    return this.toRunner(runnerName, (h) => h.signal(jobCompletedSignal, args));
  }

  /** A runner that does not exist, or has ended, is not ours: the signal itself says so (not found). */
  private async toRunner(runnerName: string, send: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<void>): Promise<SignalOutcome> {
    try {
      await send(this.deps.client.workflow.getHandle(runnerWorkflowId(runnerName)));
      return 'signalled';
    } catch (err) {
      if (isNotFound(err)) return 'not_owned';
      throw err;
    }
  }

  private async progressTo(poolWorkflow: string, progress: JobProgressArgs): Promise<void> {
    try {
      await this.deps.client.workflow.getHandle(poolWorkflow).signal(jobProgressSignal, progress);
    } catch (err) {
      // A pool that is gone has nothing left to track.
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Equal priorities go to the pool with the most free capacity, as each pool's glance in the
   * pool list shows it, less the jobs routed to it since the glance was written. The glance is
   * a few seconds old at most (`poolGlanceInterval`, and the list's own reuse); asking each pool
   * instead put a query on the webhook's answer, waiting on a busy pool's signals or on a replay
   * of a pool the worker did not hold. A pool whose memo has no glance yet is asked, and its
   * reading reused briefly.
   */
  private async pickByCapacity(pools: RoutableEntry[]): Promise<RoutableEntry> {
    if (pools.length === 1) return pools[0]!;
    const known = await Promise.all(pools.map((pool) => this.capacityOf(pool)));
    const best = mostFree(known.map((k) => k.free));
    const chosen = known[best]!;
    if (chosen.free !== undefined) chosen.free -= 1;
    chosen.routedAt.push(Date.now());
    if (chosen.routedAt.length > ROUTED_KEPT) chosen.routedAt.splice(0, chosen.routedAt.length - ROUTED_KEPT);
    return pools[best]!;
  }

  private async capacityOf(pool: RoutableEntry): Promise<KnownCapacity> {
    let known = this.capacities.get(pool.workflowId);
    if (!known) {
      known = { at: Number.NEGATIVE_INFINITY, free: undefined, routedAt: [] };
      this.capacities.set(pool.workflowId, known);
    }
    const glance = pool.memo.glance;
    if (glance) {
      if (known.glanceAt !== glance.at) {
        known.glanceAt = glance.at;
        known.routedAt = known.routedAt.filter((at) => at > glance.at);
        known.free = freeCapacityOfGlance(glance, pool.memo.maxRunners) - known.routedAt.length;
      }
      return known;
    }
    // Concurrent jobs share one reading.
    if (!known.reading && Date.now() - known.at > (this.deps.capacityCacheMs ?? 1_000)) {
      const entry = known;
      entry.reading = this.readCapacity(pool).then((free) => {
        entry.free = free;
        entry.at = Date.now();
        entry.reading = undefined;
      });
    }
    await known.reading;
    return known;
  }

  private async readCapacity(pool: RoutableEntry): Promise<number | undefined> {
    try {
      const view = await this.deps.client.withDeadline(Date.now() + this.deps.queryTimeoutMs, () =>
        this.deps.client.workflow.getHandle(pool.workflowId).query(poolStateQuery),
      );
      return freeCapacity(view);
    } catch (err) {
      this.deps.stuckWorkflows?.heardPool(pool.name, err);
      this.deps.logger.warn('pool state unavailable while routing a job', { pool: pool.name, error: (err as Error).message });
      return undefined;
    }
  }

  private async recordUnmatched(job: QueuedJob, reason: string): Promise<void> {
    await this.toUnmatched.add(unmatchedJobsWorkflowId(this.deps.taskQueue), { ...job, reason, recordedAt: new Date().toISOString() });
    this.deps.logger.info('job matched no pool', { jobId: job.jobId, reason });
  }
}

