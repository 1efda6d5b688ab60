/**
 * How an operator counts a pool's runners. A runner is in exactly one of
 * starting / idle / busy / leaving; `alive` is every runner that is not leaving.
 * "Leaving" is the pool's own rule (domain/instance-status.ts) plus runners the
 * pool has asked to go.
 */
import { isLeaving, type InstanceStatus, type RunnerStatus } from './instance-status';

/** What of a runner its phase depends on. */
export interface PhasedRunner {
  status: InstanceStatus;
  runnerStatus: RunnerStatus;
  /** The pool asked it to leave. */
  deleteRequested?: boolean;
}

export interface PoolCounts {
  alive: number;
  idle: number;
  busy: number;
  starting: number;
  leaving: number;
}

export type RunnerPhase = 'starting' | 'idle' | 'busy' | 'leaving';

export function runnerPhase(runner: PhasedRunner): RunnerPhase {
  if (runner.deleteRequested || isLeaving(runner.status, runner.runnerStatus)) return 'leaving';
  if (runner.runnerStatus === 'active') return 'busy';
  if (runner.runnerStatus === 'idle') return 'idle';
  return 'starting';
}

export function countRunners(runners: Iterable<PhasedRunner>): PoolCounts {
  const counts: PoolCounts = { alive: 0, idle: 0, busy: 0, starting: 0, leaving: 0 };
  for (const runner of runners) {
    const phase = runnerPhase(runner);
    counts[phase] += 1;
    if (phase !== 'leaving') counts.alive += 1;
  }
  return counts;
}

/** A pool's runners counted by instance status and by what their agent reported, as the metrics' gauges show them. */
export function countStatuses(runners: Iterable<PhasedRunner>): { statuses: Partial<Record<InstanceStatus, number>>; agents: Partial<Record<RunnerStatus, number>> } {
  const statuses: Partial<Record<InstanceStatus, number>> = {};
  const agents: Partial<Record<RunnerStatus, number>> = {};
  for (const { status, runnerStatus } of runners) {
    statuses[status] = (statuses[status] ?? 0) + 1;
    agents[runnerStatus] = (agents[runnerStatus] ?? 0) + 1;
  }
  return { statuses, agents };
}
