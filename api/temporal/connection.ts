/**
 * How runnerflow's clients connect to Temporal: the SDK's retries, except for
 * one answer. When a busy workflow continues as new, its last workflow task
 * usually races a signal and is refused once (`UnhandledCommand`); until the
 * retried task completes, the server refuses every signal to it ("workflow is
 * closing": RESOURCE_EXHAUSTED, cause BUSY_WORKFLOW). For a busy pool that is
 * the time the worker takes to replay its history, a second or two. The SDK
 * backs off from every RESOURCE_EXHAUSTED as from a rate limit, one second
 * first and 1.7 times longer each time, so a job queued then reached its pool
 * up to five seconds late (bench/README.md). That answer is retried from
 * 100 ms instead; a real rate limit keeps the SDK's backoff.
 */
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type BackoffOptions, type ConnectionOptions } from '@temporalio/client';
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

const BUSY_WORKFLOW_INITIAL_MS = 100;

export const temporalRetryOptions = () =>
  defaultGrpcRetryOptions({
    // The SDK's own initial intervals otherwise: 1 s for RESOURCE_EXHAUSTED, 100 ms for the rest.
    initialIntervalMs: (status) => (isBusyWorkflow(status) ? BUSY_WORKFLOW_INITIAL_MS : status.code === RESOURCE_EXHAUSTED ? 1_000 : 100),
  });

/** `Connection.connect` with runnerflow's retries; a caller's own interceptors replace them. */
export function connectTemporal(options: ConnectionOptions): Promise<Connection> {
  return Connection.connect({ interceptors: [makeGrpcRetryInterceptor(temporalRetryOptions())], ...options });
}
