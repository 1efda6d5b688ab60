import { DefaultLogger, Runtime } from '@temporalio/worker';

/**
 * The SDK's runtime for a bench or a dev stack's process: only errors are logged (the SDK logs
 * every worker start at INFO, and warns about activities a bench abandons on purpose). With
 * `metricsAddress`, the SDK's own metrics (task latencies by workflow type, slots, cache, calls
 * to the server) are served there in Prometheus' format, for finding where a task's time goes.
 */
export function installQuietRuntime(metricsAddress: string | undefined): void {
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: {
      logging: { filter: { core: 'ERROR', other: 'ERROR' } },
      ...(metricsAddress ? { metrics: { prometheus: { bindAddress: metricsAddress } } } : {}),
    },
  });
}
