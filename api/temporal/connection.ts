/**
 * How runnerflow's clients connect to Temporal: the SDK's retries, except for
 * one answer. When a busy workflow continues as new, its last workflow task
 * usually races a signal and is refused once (`UnhandledCommand`); until the
 * retried task completes, the server refuses every signal to it ("workflow is
 * closing": RESOURCE_EXHAUSTED, cause BUSY_WORKFLOW). For a busy pool that is
 * the time the worker takes to replay its history, a second or two. The SDK
 * backs off from every RESOURCE_EXHAUSTED as from a rate limit, one second
 * first and 1.7 times longer each time, so a job queued then reached its pool
 * up to five seconds late (bench/README.md). That answer is retried every
 * 100 ms instead, for up to ten seconds; a real rate limit keeps the SDK's
 * backoff.
 */
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type BackoffOptions, type ConnectionOptions, type GrpcRetryOptions } from '@temporalio/client';
// The package is CommonJS: its namespaces are properties of the default export under ESM.
import proto from '@temporalio/proto';

const { google, temporal } = proto;

type Status = Parameters<BackoffOptions['initialIntervalMs']>[0];

const RESOURCE_EXHAUSTED = 8;
const DETAILS_KEY = 'grpc-status-details-bin';
const RESOURCE_EXHAUSTED_FAILURE = 'temporal.api.errordetails.v1.ResourceExhaustedFailure';
const BUSY_WORKFLOW = temporal.api.enums.v1.ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW;

/** A refusal because the one workflow is closing or locked, read from the status's details. */
export function isBusyWorkflow(status: Pick<Status, 'code' | 'metadata'>): boolean {
  if (status.code !== RESOURCE_EXHAUSTED) return false;
  for (const raw of status.metadata?.get(DETAILS_KEY) ?? []) {
    try {
      const details = google.rpc.Status.decode(typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw).details ?? [];
      for (const any of details) {
        if (!any.type_url?.endsWith(RESOURCE_EXHAUSTED_FAILURE) || !any.value) continue;
        if (temporal.api.errordetails.v1.ResourceExhaustedFailure.decode(any.value).cause === BUSY_WORKFLOW) return true;
      }
    } catch {
      // Details this client cannot read: treated as any other RESOURCE_EXHAUSTED.
    }
  }
  return false;
}

/** A closing workflow is not an overloaded server: ask again soon, at a steady pace, for a while. */
const BUSY_WORKFLOW_RETRY_MS = 100;
const BUSY_WORKFLOW_ATTEMPTS = 100;

export function temporalRetryOptions(): GrpcRetryOptions {
  const sdk = defaultGrpcRetryOptions();
  return {
    delayFunction: (attempt, status) => (isBusyWorkflow(status) ? BUSY_WORKFLOW_RETRY_MS * (0.8 + Math.random() * 0.4) : sdk.delayFunction(attempt, status)),
    retryableDecider: (attempt, status) => (isBusyWorkflow(status) ? attempt < BUSY_WORKFLOW_ATTEMPTS : sdk.retryableDecider(attempt, status)),
  };
}

/** `Connection.connect` with runnerflow's retries; a caller's own interceptors replace them. */
export function connectTemporal(options: ConnectionOptions): Promise<Connection> {
  return Connection.connect({ interceptors: [makeGrpcRetryInterceptor(temporalRetryOptions())], ...options });
}
