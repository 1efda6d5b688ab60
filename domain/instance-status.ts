/**
 * The one authority on how a runner instance may move between statuses.
 *
 * Statuses are GARM's. Every status change in runnerflow goes through
 * `assertTransition`; there is no other way to set a status, so an illegal
 * move is a bug that surfaces immediately instead of silently overwriting state.
 */
export const INSTANCE_STATUSES = [
  'pending_create',
  'creating',
  'running',
  'stopped',
  'error',
  'pending_delete',
  'pending_force_delete',
  'deleting',
  'deleted',
] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

/** The GitHub side of a runner, as GitHub (and the runner's own callbacks) see it. */
export const RUNNER_STATUSES = ['pending', 'installing', 'idle', 'active', 'terminated', 'failed'] as const;
export type RunnerStatus = (typeof RUNNER_STATUSES)[number];

export const INSTANCE_TRANSITIONS: Readonly<Record<InstanceStatus, readonly InstanceStatus[]>> = {
  // A delete requested before creation starts is honoured without ever touching the provider.
  pending_create: ['creating', 'pending_delete', 'pending_force_delete'],
  // A graceful delete during creation waits for the create to settle (running or error):
  // interrupting a provider mid-create is how machines leak. Only force may cut in.
  creating: ['running', 'error', 'pending_force_delete'],
  running: ['stopped', 'error', 'pending_delete', 'pending_force_delete'],
  stopped: ['running', 'error', 'pending_delete', 'pending_force_delete'],
  // GARM: an instance in error is cleaned up, so anything half-created is removed.
  error: ['pending_delete', 'pending_force_delete'],
  pending_delete: ['deleting', 'pending_force_delete'],
  pending_force_delete: ['deleting'],
  // A failed graceful delete goes back to pending_delete to be retried; force may cut in at any time.
  deleting: ['deleted', 'pending_delete', 'pending_force_delete'],
  deleted: [],
};

export class IllegalTransitionError extends Error {
  constructor(
    readonly from: InstanceStatus,
    readonly to: InstanceStatus,
  ) {
    super(`illegal instance status transition ${from} -> ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

export function canTransition(from: InstanceStatus, to: InstanceStatus): boolean {
  return INSTANCE_TRANSITIONS[from].includes(to);
}

export function assertTransition(from: InstanceStatus, to: InstanceStatus): void {
  if (!canTransition(from, to)) throw new IllegalTransitionError(from, to);
}

export function isTerminal(status: InstanceStatus): boolean {
  return INSTANCE_TRANSITIONS[status].length === 0;
}

export function isDeleting(status: InstanceStatus): boolean {
  return status === 'pending_delete' || status === 'pending_force_delete' || status === 'deleting' || status === 'deleted';
}

/**
 * Whether a runner is on its way out and can take no job: being deleted, failed to
 * create, or its runner process finished (an ephemeral runner after its job) or failed.
 */
export function isLeaving(status: InstanceStatus, runnerStatus: RunnerStatus): boolean {
  return isDeleting(status) || status === 'error' || runnerStatus === 'terminated' || runnerStatus === 'failed';
}
