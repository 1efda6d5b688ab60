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
 *
 * A caller that has somewhere else to go (the webhook intake, which can hand
 * jobs to a relay) makes its calls inside `failFastWhenBusy`: there the
 * refusal is not retried at all but thrown at once, so the caller goes
 * elsewhere in milliseconds instead of waiting out the replay.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
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

export function temporalRetryOptions(whenBusy: 'retry' | 'fail' = 'retry'): GrpcRetryOptions {
  const sdk = defaultGrpcRetryOptions();
  return {
    delayFunction: (attempt, status) => (isBusyWorkflow(status) ? BUSY_WORKFLOW_RETRY_MS * (0.8 + Math.random() * 0.4) : sdk.delayFunction(attempt, status)),
    retryableDecider: (attempt, status) => (isBusyWorkflow(status) ? whenBusy === 'retry' && attempt < BUSY_WORKFLOW_ATTEMPTS : sdk.retryableDecider(attempt, status)),
  };
}

const busyFailsFast = new AsyncLocalStorage<true>();

/**
 * Runs `call` so that its Temporal calls (on a connection from `connectTemporal`)
 * throw a busy-workflow refusal at once instead of retrying it; `isBusyWorkflowError`
 * recognises what they throw. Other failures are retried as usual.
 */
export function failFastWhenBusy<R>(call: () => Promise<R>): Promise<R> {
  return busyFailsFast.run(true, call);
}

/** The error (or one of its causes) is the server refusing a busy or closing workflow. */
export function isBusyWorkflowError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const status = e as Partial<Status>;
    if (typeof status.code === 'number' && status.metadata && isBusyWorkflow(status as Status)) return true;
  }
  return false;
}

/** `Connection.connect` with runnerflow's retries; a caller's own interceptors replace them. */
export function connectTemporal(options: ConnectionOptions): Promise<Connection> {
  const retrying = makeGrpcRetryInterceptor(temporalRetryOptions('retry'));
  const failing = makeGrpcRetryInterceptor(temporalRetryOptions('fail'));
  // Chosen when the call is made, which happens in the caller's async context.
  const byCaller: typeof retrying = (callOptions, nextCall) => (busyFailsFast.getStore() ? failing : retrying)(callOptions, nextCall);
  return Connection.connect({ interceptors: [byCaller], ...options });
}
