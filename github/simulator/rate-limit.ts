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

export function rateLimitHeaders(s: RateLimitSnapshot): Record<string, string> {
  return {
    'x-ratelimit-limit': String(s.limit),
    'x-ratelimit-remaining': String(s.remaining),
    'x-ratelimit-reset': String(s.resetEpochSeconds),
    'x-ratelimit-used': String(s.used),
    'x-ratelimit-resource': 'core',
  };
}
