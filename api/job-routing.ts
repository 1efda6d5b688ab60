/**
 * Which pool takes a queued job: among enabled pools whose labels cover the
 * job's, the highest priority wins; equal priorities go to the pool with the
 * most free capacity.
 */
import { isDeleting, type InstanceStatus } from '../domain/instance-status';
import { poolMatchesLabels, scopeCoversRepository } from '../domain/pool';
import { scaleSetLabels, scaleSetTakesJob } from '../domain/scale-set';
import { queuedJobCount, type PoolGlance, type PoolView } from '../workflows/pool-messages';
import type { PoolEntry } from './pool-directory';

export type RoutableEntry = PoolEntry & { memo: NonNullable<PoolEntry['memo']> };

export type Candidates =
  | { kind: 'pools'; pools: RoutableEntry[] }
  /**
   * No webhook pool takes the job, and a scale-set pool's scale set does: GitHub offers it to that
   * scale set's listener, so it is neither routed nor recorded as unmatched (nor, found by the
   * sweep, taken for a job whose webhook was lost).
   */
  | { kind: 'scaleSet'; pools: RoutableEntry[] }
  | { kind: 'none'; reason: string };

/** The enabled matching pools of the top priority, or why there are none. */
/** Pools named in an unmatched job's reason. Every reason is kept with its job, and a batch of them travels in one signal. */
const NAMED_IN_REASON = 10;
const namesOf = (pools: readonly PoolEntry[]): string =>
  pools.length <= NAMED_IN_REASON
    ? pools.map((p) => p.name).join(', ')
    : `${pools.slice(0, NAMED_IN_REASON).map((p) => p.name).join(', ')} and ${pools.length - NAMED_IN_REASON} more`;

export function candidatePools(pools: readonly PoolEntry[], jobLabels: readonly string[], repository?: string): Candidates {
  // A pool being deleted is as good as gone; a scale-set pool takes its jobs from the scale set.
  const labelled = pools.filter((p): p is RoutableEntry => p.memo !== undefined && !p.memo.deleting && p.memo.mode !== 'scaleSet' && poolMatchesLabels(p.memo, jobLabels));
  const matching = labelled.filter((p) => !p.memo.scope || scopeCoversRepository(p.memo.scope, repository));
  const enabled = matching.filter((p) => p.memo.enabled);
  if (enabled.length === 0) {
    const scaleSets = scaleSetPoolsTaking(pools, jobLabels, repository);
    if (scaleSets.length > 0) return { kind: 'scaleSet', pools: scaleSets };
    const labels = jobLabels.join(', ') || '(none)';
    let reason = `no pool has the labels ${labels}`;
    if (matching.length > 0) reason = `the pools with the labels ${labels} are disabled: ${namesOf(matching)}`;
    else if (labelled.length > 0) reason = `no pool with the labels ${labels} registers runners for ${repository}: ${namesOf(labelled)} serve other repositories`;
    return { kind: 'none', reason };
  }
  const top = Math.max(...enabled.map((p) => p.memo.priority));
  return { kind: 'pools', pools: enabled.filter((p) => p.memo.priority === top) };
}

/** Scale-set pools whose scale set GitHub hands such a job to (a memo from before it named its scale set cannot tell). */
function scaleSetPoolsTaking(pools: readonly PoolEntry[], jobLabels: readonly string[], repository: string | undefined): RoutableEntry[] {
  return pools.filter(
    (p): p is RoutableEntry =>
      p.memo?.mode === 'scaleSet' &&
      !p.memo.deleting &&
      p.memo.scaleSet !== undefined &&
      (!p.memo.scope || scopeCoversRepository(p.memo.scope, repository)) &&
      scaleSetTakesJob(scaleSetLabels(p.memo.scaleSet.name, p.memo.labels), jobLabels),
  );
}

/** Runners a pool could still put on a new job: idle ones plus room to create, less jobs already waiting. */
const freePlaces = ({ maxRunners, live, idle, queued }: { maxRunners: number; live: number; idle: number; queued: number }): number => maxRunners - live + idle - queued;

/** A pool's free capacity from its state (`freePlaces`). */
export function freeCapacity(view: PoolView): number {
  if (view.deleting) return Number.NEGATIVE_INFINITY;
  const live = view.runners.filter((r) => !isDeleting(r.status));
  const idle = live.filter((r) => r.runnerStatus === 'idle' && r.jobId === undefined).length;
  return freePlaces({ maxRunners: view.settings.maxRunners, live: live.length, idle, queued: queuedJobCount(view) });
}

/**
 * A pool's free capacity as its glance showed it when written (`freePlaces`): its idle runners
 * are those not asked to leave either.
 */
export function freeCapacityOfGlance(glance: PoolGlance, maxRunners: number): number {
  let live = 0;
  for (const [status, n] of Object.entries(glance.statuses)) if (!isDeleting(status as InstanceStatus)) live += n ?? 0;
  return freePlaces({ maxRunners, live, idle: glance.counts.idle, queued: glance.queuedJobs });
}

/** The index of the best capacity; the first on ties and when nothing is known. */
export function mostFree(capacities: readonly (number | undefined)[]): number {
  let best = 0;
  let bestValue = Number.NEGATIVE_INFINITY;
  capacities.forEach((c, i) => {
    if (c !== undefined && c > bestValue) {
      best = i;
      bestValue = c;
    }
  });
  return best;
}
