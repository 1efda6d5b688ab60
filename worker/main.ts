/**
 * A standalone worker process: run as many as the load needs against one
 * Temporal cluster; they share nothing but Temporal.
 */
import { ConfigError, configWarnings, loadConfig, resolveSecret } from '../config/load';
import { createGitHubRegistry } from '../github/registry';
import { startWorker } from './start';
import { createLogger } from '../observability/logger';
import { serveMetrics } from '../observability/metrics-server';
import { installTemporalRuntime, sdkRuntimeOptionsFromEnv } from '../observability/temporal-runtime';

async function main(): Promise<void> {
  const logger = createLogger({ base: { component: 'worker' } });
  installTemporalRuntime(logger.pino, sdkRuntimeOptionsFromEnv(process.env, 'INFO'));
  const loaded = loadConfig();
  for (const warning of configWarnings(loaded.config)) logger.warn(warning);
  const instanceTokenKey = resolveSecret(loaded.config.api.instanceTokenSecret, loaded.env);
  if (!instanceTokenKey) {
    throw new ConfigError('a standalone worker needs api.instanceTokenSecret (shared with the API processes that verify instance callbacks)');
  }
  const metricsListen = loaded.env.RUNNERFLOW_METRICS_LISTEN;
  const metrics = metricsListen ? await serveMetrics(metricsListen) : undefined;
  if (metrics) logger.info('worker metrics served', { url: `${metrics.url}/metrics` });
  const started = await startWorker({ loaded, github: createGitHubRegistry(loaded.config, loaded.env, logger.child({ component: 'github' })), instanceTokenKey, log: (message) => logger.info(message) });
  const shutdown = (signal: string) => {
    console.log(`${signal}: finishing running activities, then stopping`);
    started.worker.shutdown();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  await started.running;
  await metrics?.close();
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? `runnerflow worker: ${err.message}` : err);
  process.exit(1);
});
