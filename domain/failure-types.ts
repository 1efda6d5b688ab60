/**
 * The types of failure activities fail with, for retry policies and workflows to
 * name. Kept free of imports so workflow code can use it inside its sandbox.
 */
export const FAILURE_TYPES = {
  /** An attempt gave up at its own time limit (activities/heartbeat.ts). */
  attemptDeadline: 'AttemptDeadline',
  githubRateLimited: 'GitHubRateLimited',
  githubRejected: 'GitHubRequestRejected',
  githubUnavailable: 'GitHubUnavailable',
  providerFault: 'ProviderFault',
  providerInstanceError: 'ProviderInstanceError',
  unknownProvider: 'UnknownProvider',
} as const;

/** Details of a failure that says when to try again (a rate limit). */
export interface RetryAfterDetails {
  retryAfterMs: number;
}
