import { describe, expect, it } from 'vitest';
import { SECONDARY_DEFAULT_WAIT_MS, toPortError } from '../../github/github-errors';
import { GitHubApiError, GitHubRateLimitError, type GitHubScope } from '../../github/port';
import { useSimulatedGitHub } from './support/simulated-github';

const repo: GitHubScope = { kind: 'repo', owner: 'octo-org', repo: 'octo-repo' };

const env = useSimulatedGitHub();

const failureOf = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);

describe('rate limits against the simulator', () => {
  it('primary: GitHubRateLimitError until x-ratelimit-reset, and no call before it when the caller waits', async () => {
    env.sim.setFault({ kind: 'primary-rate-limit', resetInMs: 1500 });
    const started = Date.now();
    const error = await failureOf(env.github.findRunnerByName(repo, 'x'));
    expect(error).toBeInstanceOf(GitHubRateLimitError);
    const limited = error as GitHubRateLimitError;
    expect(limited.kind).toBe('primary');
    // The reset header has second granularity: the wait ends at that second boundary.
    const resetAt = Math.ceil((started + 1500) / 1000) * 1000;
    expect(limited.retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(Math.abs(started + limited.retryAfterMs - resetAt)).toBeLessThan(1100);
    // No hidden retries inside the client: exactly one call reached GitHub.
    expect(env.sim.stats().totalApiCalls).toBe(1);

    await new Promise((r) => setTimeout(r, limited.retryAfterMs));
    expect(await env.github.findRunnerByName(repo, 'x')).toBeUndefined();
    const stats = env.sim.stats();
    expect(stats.totalApiCalls).toBe(2);
    expect(stats.callsDuringPrimaryRateLimit).toBe(1);
  });

  it('primary with 429 is the same', async () => {
    env.sim.setFault({ kind: 'primary-rate-limit', resetInMs: 30_000, status: 429 });
    const error = await failureOf(env.github.listRunnerDownloads(repo));
    expect(error).toMatchObject({ name: 'GitHubRateLimitError', kind: 'primary' });
    expect((error as GitHubRateLimitError).retryAfterMs).toBeGreaterThan(28_000);
  });

  it('secondary with retry-after: waits that many seconds', async () => {
    env.sim.setFault({ kind: 'secondary-rate-limit', retryAfterSeconds: 7, times: 1 });
    const error = await failureOf(env.github.createRunnerCredential({ scope: repo, name: 'r', labels: ['x'], runnerGroupId: 1, workFolder: '_work', jit: true }));
    expect(error).toBeInstanceOf(GitHubRateLimitError);
    expect(error).toMatchObject({ kind: 'secondary', retryAfterMs: 7000 });
    expect(env.sim.stats().totalApiCalls).toBe(1);
  });

  it('secondary with 429 and retry-after', async () => {
    env.sim.setFault({ kind: 'secondary-rate-limit', retryAfterSeconds: 3, status: 429, times: 1 });
    expect(await failureOf(env.github.findRunnerByName(repo, 'x'))).toMatchObject({ kind: 'secondary', retryAfterMs: 3000 });
  });

  it('secondary from the message alone: at least a minute', async () => {
    env.sim.setFault({ kind: 'secondary-rate-limit', retryAfterSeconds: null, times: 1 });
    const error = await failureOf(env.github.removeRunner({ scope: repo, name: 'x', runnerId: 5 }));
    expect(error).toMatchObject({ kind: 'secondary', retryAfterMs: SECONDARY_DEFAULT_WAIT_MS });
    expect(SECONDARY_DEFAULT_WAIT_MS).toBeGreaterThanOrEqual(60_000);
  });
});

describe('error translation', () => {
  const httpError = (status: number, headers: Record<string, string>, message = 'nope') =>
    Object.assign(new Error(message), { name: 'HttpError', status, response: { headers, data: { message } } });
  const now = 1_700_000_000_000;

  it('primary: ms until reset', () => {
    const err = toPortError('op', httpError(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 42) }), now);
    expect(err).toMatchObject({ kind: 'primary', retryAfterMs: 42_000 });
  });

  it('a 403 that is not a rate limit is a plain, non-retryable error', () => {
    const err = toPortError('delete_runner', httpError(403, { 'x-ratelimit-remaining': '4000' }, 'Resource not accessible by integration'), now);
    expect(err).toBeInstanceOf(GitHubApiError);
    expect(err).toMatchObject({ status: 403, retryable: false, message: 'delete_runner: GitHub answered 403: Resource not accessible by integration' });
  });

  it('a 403 secondary message wins over a zero remaining count', () => {
    const err = toPortError('op', httpError(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 900) }, 'You have exceeded a secondary rate limit'), now);
    expect(err).toMatchObject({ kind: 'secondary', retryAfterMs: 60_000 });
  });
});
