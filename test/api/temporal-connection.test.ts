// The package is CommonJS: its namespaces are properties of the default export under ESM.
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { isBusyWorkflow, temporalRetryOptions } from '../../api/temporal/connection';

const { google, temporal } = proto;

const RESOURCE_EXHAUSTED = 8;
const { ResourceExhaustedCause } = temporal.api.enums.v1;

/** A gRPC status as the server sends it: the cause travels in `grpc-status-details-bin`. */
function exhausted(cause: number | undefined, details = 'refused') {
  const failure = temporal.api.errordetails.v1.ResourceExhaustedFailure.encode({ cause: cause ?? 0 }).finish();
  const body = google.rpc.Status.encode({
    code: RESOURCE_EXHAUSTED,
    message: details,
    details: cause === undefined ? [] : [{ type_url: 'type.googleapis.com/temporal.api.errordetails.v1.ResourceExhaustedFailure', value: failure }],
  }).finish();
  const metadata = { get: (key: string) => (key === 'grpc-status-details-bin' ? [Buffer.from(body)] : []) };
  return { code: RESOURCE_EXHAUSTED, details, metadata } as unknown as Parameters<typeof isBusyWorkflow>[0] & { details: string };
}

describe('Temporal client retries', () => {
  it('tells a closing or busy workflow from a rate limit by the cause in the status details', () => {
    expect(isBusyWorkflow(exhausted(ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW, 'workflow is closing'))).toBe(true);
    expect(isBusyWorkflow(exhausted(ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT))).toBe(false);
    expect(isBusyWorkflow(exhausted(undefined))).toBe(false);
    expect(isBusyWorkflow({ code: 14, metadata: { get: () => [] } } as unknown as Parameters<typeof isBusyWorkflow>[0])).toBe(false);
    // Unreadable details are a plain RESOURCE_EXHAUSTED, not an error.
    expect(isBusyWorkflow({ code: RESOURCE_EXHAUSTED, metadata: { get: () => [Buffer.from([0xff, 0xff, 0xff])] } } as unknown as Parameters<typeof isBusyWorkflow>[0])).toBe(false);
  });

  it('retries a busy workflow every 100 ms for up to ten seconds, and keeps backing off from a rate limit from 1 s', () => {
    const { delayFunction, retryableDecider } = temporalRetryOptions();
    const busy = exhausted(ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW);
    const limited = exhausted(ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT);
    for (const attempt of [1, 5, 50]) {
      expect(retryableDecider(attempt, busy)).toBe(true);
      expect(delayFunction(attempt, busy)).toBeLessThanOrEqual(120);
    }
    expect(retryableDecider(100, busy)).toBe(false);
    // The SDK's backoff: factor^attempt x initial x jitter (±20 %), at most 10 attempts.
    expect(delayFunction(1, limited)).toBeGreaterThanOrEqual(1.7 * 1_000 * 0.8);
    expect(retryableDecider(10, limited)).toBe(false);
  });
});
