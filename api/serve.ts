/**
 * Starts the API as a Node server for a loaded config: the piece `npm start`
 * and tests call; the Temporal client and GitHub registry are the caller's.
 */
import type { Client } from '@temporalio/client';
import type { LoadedConfig } from '../config/load';
import { createApp } from './app';
import { DEFAULT_LIMITS, type AppLimits, type GitHubRegistry, type Logger } from './deps';
import { startHttpServer, type HttpServer } from './node-server';
import { exposePoolMetrics } from './pool-metrics';
import { resolveApiSecrets } from './secrets';

export interface ServeApiOptions {
  loaded: LoadedConfig;
  client: Client;
  github: GitHubRegistry;
  logger: Logger;
  /** Overrides config.api.listen (tests pass 127.0.0.1:0). */
  listen?: string;
  limits?: Partial<AppLimits>;
}

export async function serveApi(options: ServeApiOptions): Promise<HttpServer> {
  const { loaded, client, github, logger } = options;
  const secrets = resolveApiSecrets(loaded.config, loaded.env, logger);
  const app = createApp({ client, taskQueue: loaded.config.temporal.taskQueue, config: loaded.config, github, secrets, logger, limits: options.limits });
  const server = await startHttpServer(app, options.listen ?? loaded.config.api.listen, {
    onError: (message, meta) => logger.error(message, meta),
  });
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const hidePoolMetrics = exposePoolMetrics(client, {
    cacheMs: limits.poolMetricsCacheMs,
    queryTimeoutMs: limits.queryTimeoutMs,
    taskQueue: loaded.config.temporal.taskQueue,
    onPoolReadFailed: (pool, err) => app.poolReadFailed?.(pool, err),
  });
  logger.info('HTTP API listening', { url: server.url });
  return {
    url: server.url,
    async close() {
      hidePoolMetrics();
      app.releaseHeld?.();
      await server.close();
    },
  };
}
