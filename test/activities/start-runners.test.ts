import { ServiceError, WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createPoolActivities, refusedForGood } from '../../activities/pool-activities';
import { instanceStartOptions } from '../../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { connectClient, instanceInput, uniqueName } from '../support/temporal';

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
      expect(refusedForGood(wrapped(code)), `code ${code}`).toBe(false);
    }
    expect(refusedForGood(new ServiceError('Unexpected error while making gRPC request'))).toBe(false);
  });

  it('is refused when the server said no for good, or the request never left', () => {
    for (const code of [status.INVALID_ARGUMENT, status.NOT_FOUND, status.PERMISSION_DENIED, status.FAILED_PRECONDITION]) {
      expect(refusedForGood(wrapped(code)), `code ${code}`).toBe(true);
    }
    expect(refusedForGood(new TypeError('could not encode the input'))).toBe(true);
  });
});

describe('a runner report its pool does not take', () => {
  /** The pool activities over a client whose signals all fail with `err`. */
  const reportingThrough = (err: unknown) =>
    createPoolActivities({ client: { workflow: { getHandle: () => ({ signal: () => Promise.reject(err) }) } } as unknown as Client });
  const report = { pool: 'linux', report: { name: 'linux-a', seq: 1, status: 'deleted' as const, runnerStatus: 'terminated' as const } };

  it('is tried again while the server cannot be reached', async () => {
    const thrown = await reportingThrough(wrapped(status.UNAVAILABLE)).reportToPool(report).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(ServiceError);
    expect(thrown).not.toBeInstanceOf(ApplicationFailure);
  });

  it('is not tried again once the server has said no for good', async () => {
    const thrown = await reportingThrough(wrapped(status.INVALID_ARGUMENT)).reportToPool(report).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    expect((thrown as ApplicationFailure).nonRetryable).toBe(true);
    expect((thrown as ApplicationFailure).message).toContain('pool linux refused the report');
  });

  it('is done when the pool no longer exists: there is nothing left to tell', async () => {
    await expect(reportingThrough(new WorkflowNotFoundError('gone', 'pool/linux', undefined)).reportToPool(report)).resolves.toBeUndefined();
  });
});

describe('a runner name', () => {
  it('lives once: a start retried after the runner closed is answered "already started", not run again', async () => {
    const { client, connection } = await connectClient();
    try {
      // No worker polls this queue: the runner only needs to exist and then close.
      const taskQueue = uniqueName('tq-once');
      const input = instanceInput(uniqueName('once'));
      const first = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(input) });
      await first.terminate('did its job');
      // What the pool's start activity does when its first answer was lost: the same start again.
      await expect(client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(input) })).rejects.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
      const runs = await client.workflow.count(`WorkflowId = '${first.workflowId}'`);
      expect(runs.count).toBe(1);
    } finally {
      await connection.close();
    }
  });
});
