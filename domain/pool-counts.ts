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
