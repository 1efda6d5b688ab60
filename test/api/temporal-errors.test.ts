import { ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { temporalFailureReason, temporalHttpError } from '../../api/temporal/errors';

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

// The real server's side of this (a worker that stops, then 503 no_worker) is in no-worker.test.ts.
describe('a task queue no worker polls', () => {
  const noPoller = () => serviceError(9, 'no poller seen for task queue recently, worker may be down');

  it('is 503 no_worker naming the task queue, not a bug of ours', () => {
    const error = temporalHttpError(noPoller(), 'runnerflow-east');
    expect(error).toMatchObject({ status: 503, code: 'no_worker' });
    expect(error?.message).toBe('no runnerflow worker polls task queue "runnerflow-east": start one (npm run worker) with this task queue');
    // Another failed precondition is not this.
    expect(temporalHttpError(serviceError(9, 'workflow execution already completed'))).toBeUndefined();
    // Nor is a workflow whose tasks keep failing (its real-server side is in test/liveness/stuck-workflows.test.ts).
    expect(temporalHttpError(serviceError(9, 'Unable to query workflow due to Workflow Task in failed state.'))).toMatchObject({ status: 503, code: 'workflow_task_failing' });
  });

  it('is said as the reason in the summary, as is what the client leaves out of other failures', () => {
    expect(temporalFailureReason(noPoller(), 'runnerflow-east')).toMatch(/^no runnerflow worker polls task queue "runnerflow-east"/);
    expect(temporalFailureReason(serviceError(13, 'query handler threw'))).toBe('Failed to query Workflow: query handler threw');
    expect(temporalFailureReason(new Error('plain'))).toBe('plain');
  });

  it('a deadline names both the server and the worker as what may be missing', () => {
    expect(temporalHttpError(serviceError(4, 'Deadline exceeded'), 'tq')?.message).toBe(
      'Temporal did not answer in time: the Temporal server is down or slow, or no runnerflow worker polls task queue "tq"',
    );
  });
});
