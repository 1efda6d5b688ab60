/**
 * The runner instance as its workflow sees it. Status changes only through
 * `moveTo`, which enforces the transition table and keeps the search attributes
 * (what the Web UI and `temporal workflow list` show) in step with the query.
 */
import { upsertSearchAttributes } from '@temporalio/workflow';
import { assertTransition, type InstanceStatus, type RunnerStatus } from '../domain/instance-status';
import type { InstanceState, RunnerInstanceInput, StatusTransition } from './messages';
import { RUNNER_LEAKED, RUNNER_STATUS } from './search-attributes';

const MAX_ERROR_LENGTH = 2000;

export class InstanceRecord {
  status: InstanceStatus = 'pending_create';
  runnerStatus: RunnerStatus = 'pending';
  providerId?: string;
  githubRunnerId?: number;
  jobId?: number;
  forced = false;
  leaked = false;
  lastError?: string;
  health?: InstanceState['health'];
  readonly transitions: StatusTransition[] = [];

  /** A continued run picks up the previous run's state as it was, transitions included. */
  constructor(private readonly input: RunnerInstanceInput) {
    const carried = input.resume?.state;
    if (!carried) return;
    this.status = carried.status;
    this.runnerStatus = carried.runnerStatus;
    this.providerId = carried.providerId;
    this.githubRunnerId = carried.githubRunnerId;
    this.jobId = carried.jobId;
    this.forced = carried.forced;
    this.leaked = carried.leaked;
    this.lastError = carried.lastError;
    this.health = carried.health;
    this.transitions.push(...carried.transitions);
  }

  moveTo(to: InstanceStatus, reason?: string): void {
    assertTransition(this.status, to);
    this.transitions.push({ from: this.status, to, at: new Date().toISOString(), ...(reason ? { reason } : {}) });
    this.status = to;
    upsertSearchAttributes([{ key: RUNNER_STATUS, value: to }]);
  }

  markLeaked(): void {
    this.leaked = true;
    upsertSearchAttributes([{ key: RUNNER_LEAKED, value: true }]);
  }

  recordError(err: unknown): void {
    this.lastError = describeFailure(err).slice(0, MAX_ERROR_LENGTH);
  }

  snapshot(): InstanceState {
    return {
      name: this.input.name,
      pool: this.input.pool,
      provider: this.input.provider,
      status: this.status,
      runnerStatus: this.runnerStatus,
      ...(this.providerId !== undefined ? { providerId: this.providerId } : {}),
      ...(this.githubRunnerId !== undefined ? { githubRunnerId: this.githubRunnerId } : {}),
      ...(this.jobId !== undefined ? { jobId: this.jobId } : {}),
      forced: this.forced,
      leaked: this.leaked,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
      ...(this.health !== undefined ? { health: { ...this.health } } : {}),
      transitions: [...this.transitions],
    };
  }
}

/** The innermost message of a Temporal failure chain (ActivityFailure → ApplicationFailure). */
export function describeFailure(err: unknown): string {
  let current: unknown = err;
  const messages: string[] = [];
  while (current instanceof Error) {
    if (current.message) messages.push(current.message);
    current = (current as Error & { cause?: unknown }).cause;
  }
  return messages.length > 0 ? messages[messages.length - 1]! : String(err);
}
