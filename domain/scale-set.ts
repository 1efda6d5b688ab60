/**
 * The rules of a scale-set pool, free of Temporal and HTTP so they can be read
 * in one place.
 */
import type { PoolSettings } from './pool';

/** The scale set's name: what `runs-on` names. */
export const scaleSetNameOf = (settings: Pick<PoolSettings, 'name' | 'scaleSet'>): string => settings.scaleSet?.name ?? settings.name;

/**
 * actions-runner-controller's rule (cmd/ghalistener/worker/worker.go,
 * HandleDesiredRunnerCount): `min(minRunners + totalAssignedJobs, maxRunners)`.
 * Assigned jobs include running ones, so busy runners are part of the count.
 */
export function desiredRunnerCount(minRunners: number, maxRunners: number, totalAssignedJobs: number): number {
  return Math.max(0, Math.min(minRunners + Math.max(0, totalAssignedJobs), maxRunners));
}

/** Owner name of our sessions: tells operators (and GitHub's UI) which installation and pool listens. */
export const sessionOwnerName = (controllerId: string, pool: string): string => `runnerflow/${controllerId}/${pool}`;
