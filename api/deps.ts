/**
 * Everything the HTTP app needs, passed in whole. The app keeps no state that
 * matters between requests (only short-lived caches), so any number of API
 * processes or serverless instances can serve one Temporal namespace.
 */
import type { Client } from '@temporalio/client';
import type { RunnerflowConfig } from '../config/schema';
import type { GitHubRegistry } from '../github/registry';

/** Structured log sink; `meta` never carries secrets. */
export interface Logger {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

export type { GitHubRegistry };

export interface ApiSecrets {
  /** Bearer token for /api/v1/*; when absent the admin routes refuse every caller. */
  adminToken?: string;
  /** Shared secret of the GitHub webhook (X-Hub-Signature-256). */
  webhookSecret?: string;
  /** The webhook's secret before a rotation, accepted beside `webhookSecret` until GitHub has the new one. */
  previousWebhookSecret?: string;
  /** Key that signs and verifies instance callback tokens. */
  instanceTokenKey: string;
  /**
   * Looks at the secret files again now, whatever the interval; true when a value changed. Asked
   * when a caller's secret matched none: it may have been signed with a secret just written in.
   */
  recheck?(): boolean;
}

export interface AppLimits {
  /** Largest JSON body accepted on /api/v1/*. */
  apiBodyBytes: number;
  /** How long a Temporal query (state of a runner or pool) may take before 504. */
  queryTimeoutMs: number;
  /** How long the pool list used for job routing is reused. */
  poolCacheMs: number;
  /** How long the pool gauges of /metrics (runners by status, queued jobs) are reused. */
  poolMetricsCacheMs: number;
  /** How long the summary waits for each pool: one pool whose worker is gone must not stall the dashboard. */
  summaryPoolTimeoutMs: number;
  /** How long a summary's pools are shared with the summary requests that follow (every open dashboard polls). */
  summaryShareMs: number;
  /** The least time between two asks for a provider's liveness pass on behalf of its stuck pools. */
  stuckPoolAskGapMs: number;
}

export const DEFAULT_LIMITS: AppLimits = {
  apiBodyBytes: 1024 * 1024,
  queryTimeoutMs: 5_000,
  poolCacheMs: 3_000,
  poolMetricsCacheMs: 5_000,
  summaryPoolTimeoutMs: 2_000,
  summaryShareMs: 1_000,
  stuckPoolAskGapMs: 10_000,
};

export interface AppDeps {
  client: Client;
  taskQueue: string;
  config: RunnerflowConfig;
  github: GitHubRegistry;
  secrets: ApiSecrets;
  logger: Logger;
  limits?: Partial<AppLimits>;
}
