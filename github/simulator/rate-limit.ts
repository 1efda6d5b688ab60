/**
 * GitHub's primary rate limit for the simulated token: a fixed hourly window
 * and the `x-ratelimit-*` headers every answer carries.
 */

export interface RateLimitSnapshot {
  limit: number;
  remaining: number;
  used: number;
  resetEpochSeconds: number;
}

export class RateLimitWindow {
  private used = 0;
  private resetEpochSeconds = 0;

  constructor(private readonly limit: number) {}

  /** Counts one call; false when the window is already exhausted. */
  take(): boolean {
    this.roll();
    if (this.used >= this.limit) return false;
    this.used += 1;
    return true;
  }

  snapshot(): RateLimitSnapshot {
    this.roll();
    return { limit: this.limit, remaining: Math.max(0, this.limit - this.used), used: this.used, resetEpochSeconds: this.resetEpochSeconds };
  }

  private roll(): void {
    const now = Math.floor(Date.now() / 1000);
    if (now >= this.resetEpochSeconds) {
      this.used = 0;
      this.resetEpochSeconds = now + 3600;
    }
  }
}

/**
 * `GET /rate_limit`'s answer: the window for the REST API (`core`, and `rate`, its older
 * name); the other resources GitHub lists, which the simulator does not limit, at full.
 */
export function rateLimitOverview(s: RateLimitSnapshot): Record<string, unknown> {
  const core = { limit: s.limit, used: s.used, remaining: s.remaining, reset: s.resetEpochSeconds };
  const unused = (limit: number) => ({ limit, used: 0, remaining: limit, reset: s.resetEpochSeconds });
  return { resources: { core, search: unused(30), graphql: unused(5_000), integration_manifest: unused(5_000) }, rate: core };
}

export function rateLimitHeaders(s: RateLimitSnapshot): Record<string, string> {
  return {
    'x-ratelimit-limit': String(s.limit),
    'x-ratelimit-remaining': String(s.remaining),
    'x-ratelimit-reset': String(s.resetEpochSeconds),
    'x-ratelimit-used': String(s.used),
    'x-ratelimit-resource': 'core',
  };
}
