/**
 * Temporal failures that are not bugs of ours: the cluster is down or slow, or
 * no worker answers a query. They become 503/504 with a reason instead of 500.
 */
import { QueryNotRegisteredError, QueryRejectedError, isGrpcDeadlineError, isGrpcServiceError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { HttpError } from '../http/errors';

const GRPC_CANCELLED = 1;
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_FAILED_PRECONDITION = 9;

/** The gRPC status of the error or of one of its causes (the client wraps them in ServiceError). */
function grpcStatus(err: unknown): { code: number; details: string } | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, details } = e as { code?: unknown; details?: unknown };
    if ((isGrpcServiceError(e) || e instanceof Error) && typeof code === 'number') return { code, details: typeof details === 'string' ? details : (e as Error).message };
  }
  return undefined;
}

/** The server's answer to a query when the workflow's tasks keep failing: no worker can run it as it is. */
export function isWorkflowTaskFailing(err: unknown): boolean {
  const status = grpcStatus(err);
  return status?.code === GRPC_FAILED_PRECONDITION && /workflow task in failed state/i.test(status.details);
}

export function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError;
}

/**
 * The HttpError for an infrastructure failure, or undefined when the error is something else.
 * `taskQueue`, when known, is named where no worker answers.
 */
export function temporalHttpError(err: unknown, taskQueue?: string): HttpError | undefined {
  if (err instanceof HttpError) return undefined;
  const status = grpcStatus(err);
  const queue = taskQueue ? `task queue "${taskQueue}"` : 'the task queue';
  // A deadline can also end as CANCELLED: the server's copy of the deadline may fire first, and it then resets
  // the stream, which grpc-js reports as "Call cancelled". The API never cancels a call itself (a dropped
  // connection is reported as UNAVAILABLE), so CANCELLED means the deadline ran out.
  if (isGrpcDeadlineError(err) || status?.code === GRPC_DEADLINE_EXCEEDED || status?.code === GRPC_CANCELLED) {
    return new HttpError(504, 'temporal_timeout', `Temporal did not answer in time: the Temporal server is down or slow, or no runnerflow worker polls ${queue}`);
  }
  if (status?.code === GRPC_UNAVAILABLE) return new HttpError(503, 'temporal_unavailable', 'Temporal is not reachable');
  // The server answers a query at once so when no worker has polled the workflow's task queue for a while.
  if (status?.code === GRPC_FAILED_PRECONDITION && /no poller seen/i.test(status.details)) {
    return new HttpError(503, 'no_worker', `no runnerflow worker polls ${queue}: start one (npm run worker) with this task queue`);
  }
  if (isWorkflowTaskFailing(err)) {
    return new HttpError(
      503,
      'workflow_task_failing',
      "the workflow's tasks are failing, so it cannot answer: its history in the Temporal Web UI says why (a pool stuck on a nondeterminism error is reset by its provider's liveness pass, called for at once; a runner so stuck is ended by the next pass)",
    );
  }
  if (err instanceof QueryNotRegisteredError || err instanceof QueryRejectedError) {
    return new HttpError(502, 'query_failed', `the workflow did not answer the query: ${err.message}`);
  }
  return undefined;
}

/**
 * Why a Temporal call failed, in a line for a caller: the mapped reason, else the innermost
 * cause's message (the client's own, such as "Failed to query Workflow", says only what failed).
 */
export function temporalFailureReason(err: unknown, taskQueue?: string): string {
  const mapped = temporalHttpError(err, taskQueue);
  if (mapped) return mapped.message;
  const status = grpcStatus(err);
  const message = err instanceof Error ? err.message : String(err);
  return status && status.details && status.details !== message ? `${message}: ${status.details}` : message;
}
