/**
 * Turns port errors into Temporal failures that carry the retry decision:
 * rate limits become the next retry delay (a durable sleep, not a spin),
 * answers that will not change on retry become non-retryable.
 */
import { ApplicationFailure } from '@temporalio/common';
import { GitHubApiError, GitHubRateLimitError } from '../github/port';
import { ProviderError, ProviderFaultError } from '../providers/port';
import { scrubSecrets } from '../observability/secret-scrub';
import { FAILURE_TYPES, type RetryAfterDetails } from '../domain/failure-types';

export { FAILURE_TYPES, type RetryAfterDetails };

/**
 * An error as a pass's report names it. Reports go into workflow history, so a
 * token an error message may carry is scrubbed (before the cut, which could
 * otherwise leave half a token the scrubber no longer recognises) and the text
 * is bounded.
 */
export const reportErrorText = (err: unknown, maxLength = 300): string =>
  scrubSecrets(err instanceof Error ? err.message : String(err)).slice(0, maxLength);

export interface FailureOptions {
  /** Treat non-retryable GitHub answers as retryable (an operator may fix credentials meanwhile). */
  retryRejectedGitHubCalls?: boolean;
  /**
   * Treat every provider fault as retryable. A delete must: the machine exists until the provider
   * confirms it gone, and what made the fault permanent (credentials, a missing executable during a
   * redeploy) is exactly what an operator fixes while the delete backs off.
   */
  retryProviderFaults?: boolean;
}

/** Failure messages land in workflow history and logs: a credential quoted by GitHub or a provider must not. */
export function toActivityFailure(err: unknown, options: FailureOptions = {}): unknown {
  if (err instanceof Error) err.message = scrubSecrets(err.message);
  return classify(err, options);
}

function classify(err: unknown, options: FailureOptions): unknown {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof GitHubRateLimitError) {
    const retryAfterMs = Math.max(1, err.retryAfterMs);
    return ApplicationFailure.create({
      type: FAILURE_TYPES.githubRateLimited,
      message: err.message,
      nextRetryDelay: retryAfterMs,
      // The delay again, where a workflow can read it: a failure decoded there carries no nextRetryDelay.
      details: [{ retryAfterMs } satisfies RetryAfterDetails],
    });
  }
  if (err instanceof GitHubApiError) {
    const nonRetryable = !err.retryable && !options.retryRejectedGitHubCalls;
    return ApplicationFailure.create({
      type: err.retryable ? FAILURE_TYPES.githubUnavailable : FAILURE_TYPES.githubRejected,
      message: err.message,
      nonRetryable,
    });
  }
  if (err instanceof ProviderError) {
    const detail = err.providerMessage ? `${err.message}: ${err.providerMessage}` : err.message;
    return ApplicationFailure.create({
      type: FAILURE_TYPES.providerFault,
      message: scrubSecrets(detail),
      nonRetryable: err instanceof ProviderFaultError && !err.retryable && !options.retryProviderFaults,
    });
  }
  return err;
}
