/**
 * Turns Octokit failures into the port's typed errors. Rate limits become
 * GitHubRateLimitError with the wait GitHub asked for, so the calling activity
 * can make that its next retry delay; nothing here waits or retries.
 */
import { GitHubApiError, GitHubRateLimitError } from './port';

/** What an Octokit RequestError carries that we use (duck-typed: several copies of the class may be installed). */
export interface HttpFailure {
  status: number;
  message: string;
  response?: { headers: Record<string, string | number | undefined>; data?: unknown };
}

/** Without a retry-after, GitHub asks for at least a minute after a secondary limit. */
export const SECONDARY_DEFAULT_WAIT_MS = 60_000;
/** Never retry sooner than this after a primary limit, even with a reset already past (clock skew). */
const PRIMARY_MIN_WAIT_MS = 1_000;

export function asHttpFailure(err: unknown): HttpFailure | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const candidate = err as Partial<HttpFailure> & { name?: string };
  return candidate.name === 'HttpError' && typeof candidate.status === 'number' ? (candidate as HttpFailure) : undefined;
}

export function header(headers: Record<string, string | number | undefined>, name: string): string | undefined {
  const value = headers[name];
  return value === undefined ? undefined : String(value);
}

/** GitHub's own message from the error body, else Octokit's. */
export function githubMessage(failure: HttpFailure): string {
  const data = failure.response?.data;
  if (typeof data === 'object' && data !== null && typeof (data as { message?: unknown }).message === 'string') {
    return (data as { message: string }).message;
  }
  return typeof data === 'string' && data.trim() ? data.trim().slice(0, 300) : failure.message;
}

export function toPortError(operation: string, err: unknown, now = Date.now()): GitHubRateLimitError | GitHubApiError {
  const failure = asHttpFailure(err);
  if (!failure || !failure.response) {
    // No answer from GitHub (DNS, connection reset, timeout): worth retrying.
    const reason = err instanceof Error ? err.message : String(err);
    return new GitHubApiError(`${operation}: GitHub unreachable: ${reason}`, undefined, true);
  }
  const headers = failure.response.headers;
  const message = githubMessage(failure);
  const requestId = header(headers, 'x-github-request-id');
  const suffix = requestId ? ` (request ${requestId})` : '';
  if (failure.status === 403 || failure.status === 429) {
    const remaining = header(headers, 'x-ratelimit-remaining');
    const reset = Number(header(headers, 'x-ratelimit-reset'));
    const retryAfter = header(headers, 'retry-after');
    const secondaryMessage = /secondary rate limit/i.test(message);
    if (remaining === '0' && Number.isFinite(reset) && !secondaryMessage) {
      const wait = Math.max(PRIMARY_MIN_WAIT_MS, reset * 1000 - now);
      return new GitHubRateLimitError('primary', wait, `${operation}: GitHub primary rate limit: ${message}${suffix}; resets in ${Math.ceil(wait / 1000)}s`);
    }
    if (retryAfter !== undefined || secondaryMessage || failure.status === 429) {
      const seconds = Number(retryAfter);
      const wait = retryAfter !== undefined && Number.isFinite(seconds) ? seconds * 1000 : SECONDARY_DEFAULT_WAIT_MS;
      return new GitHubRateLimitError('secondary', wait, `${operation}: GitHub secondary rate limit: ${message}${suffix}; retry in ${Math.ceil(wait / 1000)}s`);
    }
  }
  const retryable = failure.status >= 500;
  return new GitHubApiError(`${operation}: GitHub answered ${failure.status}: ${message}${suffix}`, failure.status, retryable);
}
