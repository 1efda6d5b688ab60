import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { startRefused } from '../../activities/pool-activities';

/** gRPC status codes (google.rpc.Code). */
const status = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A gRPC error as @grpc/grpc-js throws it, wrapped the way the Temporal client wraps it. */
function wrapped(code: number): ServiceError {
  const grpc = Object.assign(new Error(`grpc ${code}`), { code, details: `grpc ${code}`, metadata: {} });
  return new ServiceError('Failed to start Workflow', { cause: grpc });
}

describe('a failed runner start', () => {
  it('is undecided (retried, never forgotten) when the server may have started it before the answer was lost', () => {
    for (const code of [status.DEADLINE_EXCEEDED, status.UNAVAILABLE, status.CANCELLED, status.UNKNOWN, status.INTERNAL, status.RESOURCE_EXHAUSTED]) {
      expect(startRefused(wrapped(code)), `code ${code}`).toBe(false);
    }
    expect(startRefused(new ServiceError('Unexpected error while making gRPC request'))).toBe(false);
  });

  it('is refused when the server said no for good, or the request never left', () => {
    for (const code of [status.INVALID_ARGUMENT, status.NOT_FOUND, status.PERMISSION_DENIED, status.FAILED_PRECONDITION]) {
      expect(startRefused(wrapped(code)), `code ${code}`).toBe(true);
    }
    expect(startRefused(new TypeError('could not encode the input'))).toBe(true);
  });
});
