/**
 * The machineCleanup workflow's surface, shared by the workflow, the activity
 * that starts it and operators' tools.
 */
import type { SearchAttributePair } from '@temporalio/common';
import type { InstanceTimings } from '../domain/timings';
import type { InstanceSpec } from './messages';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_STATUS } from './search-attributes';

export const MACHINE_CLEANUP_WORKFLOW = 'machineCleanup';
/** One per machine: starting it twice (a retried activity, a replayed workflow) finds the first. */
export const cleanupWorkflowId = (name: string): string => `cleanup/${name}`;

export interface MachineCleanupInput {
  name: string;
  pool: string;
  provider: string;
  providerId?: string;
  github: InstanceSpec['github'];
  githubRunnerId?: number;
  /** A scale set's runner: its registration is removed through the Actions service. */
  scaleSetId?: number;
  /** The forced delete already dropped the GitHub registration. */
  githubRemoved: boolean;
  /**
   * The forced delete cut off a create that was still under way. A cloud that had already
   * taken the request (or an executable killed half-way) can still make the machine after the
   * provider said there was none, for as long as that attempt could have run: the clean-up
   * keeps deleting, with the usual backoff, until this long after it started.
   */
  createMayLandWithinMs?: number;
  timings: InstanceTimings;
  reason: string;
}

export interface MachineCleanupResult {
  name: string;
  deletedAt: string;
}

/**
 * A clean-up starts marked leaked, under its runner's name, pool and provider, so that
 * `RunnerLeaked=true AND ExecutionStatus='Running'` lists exactly the machines not yet confirmed gone.
 */
export function cleanupSearchAttributes(machine: Pick<MachineCleanupInput, 'name' | 'pool' | 'provider'>): SearchAttributePair[] {
  return [
    { key: RUNNER_LEAKED, value: true },
    { key: RUNNER_STATUS, value: 'deleting' },
    { key: RUNNER_NAME, value: machine.name },
    { key: RUNNER_POOL, value: machine.pool },
    { key: RUNNER_PROVIDER, value: machine.provider },
  ];
}
