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

/** The gRPC status code of the error or of one of its causes (the client wraps them in ServiceError). */
function grpcCode(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e)) return e.code;
    const code = (e as { code?: unknown }).code;
    if (e instanceof Error && typeof code === 'number') return code;
  }
  return undefined;
}

export function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError;
}

/** The HttpError for an infrastructure failure, or undefined when the error is something else. */
export function temporalHttpError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return undefined;
  const code = grpcCode(err);
  // A deadline can also end as CANCELLED: the server's copy of the deadline may fire first, and it then resets
  // the stream, which grpc-js reports as "Call cancelled". The API never cancels a call itself (a dropped
  // connection is reported as UNAVAILABLE), so CANCELLED means the deadline ran out.
  if (isGrpcDeadlineError(err) || code === GRPC_DEADLINE_EXCEEDED || code === GRPC_CANCELLED) {
    return new HttpError(504, 'temporal_timeout', 'Temporal did not answer in time (is a runnerflow worker running?)');
  }
  if (code === GRPC_UNAVAILABLE) return new HttpError(503, 'temporal_unavailable', 'Temporal is not reachable');
  if (err instanceof QueryNotRegisteredError || err instanceof QueryRejectedError) {
    return new HttpError(502, 'query_failed', `the workflow did not answer the query: ${err.message}`);
  }
  return undefined;
}
