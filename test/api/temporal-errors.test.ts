import { ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { temporalHttpError } from '../../api/temporal/errors';

/** A gRPC failure as the Temporal client throws it: a ServiceError whose cause carries the status code. */
function serviceError(code: number, details: string): ServiceError {
  return new ServiceError('Failed to query Workflow', { cause: Object.assign(new Error(`${code} ${details}`), { code, details }) });
}

// The real server's side of this (a query no worker takes, answered 504 in the summary) is in overview.test.ts.
// Which of the two deadline outcomes a call gets there is a race of timers, so the mapping is pinned here.
describe('Temporal failures as API answers', () => {
  it('maps a deadline, a call the server cut off at its deadline, and an unreachable server; leaves other errors alone', () => {
    expect(temporalHttpError(serviceError(4, 'Deadline exceeded after 0.800s'))).toMatchObject({ status: 504, code: 'temporal_timeout' });
    expect(temporalHttpError(serviceError(1, 'Call cancelled'))).toMatchObject({ status: 504, code: 'temporal_timeout' });
    expect(temporalHttpError(serviceError(14, 'No connection established'))).toMatchObject({ status: 503, code: 'temporal_unavailable' });
    expect(temporalHttpError(serviceError(3, 'invalid query'))).toBeUndefined();
    expect(temporalHttpError(new WorkflowNotFoundError('gone', 'wf', undefined))).toBeUndefined();
  });
});
