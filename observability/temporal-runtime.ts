/**
 * The Temporal SDK runtime of a worker process: its log lines (worker, workflow
 * and activity logs, and the native core's, forwarded) go through the process's
 * pino logger, so they are redacted like every other line; its own metrics
 * (task slots, poll latency, schedule-to-start, sticky cache, ...) are served
 * by the SDK's Prometheus exporter when RUNNERFLOW_SDK_METRICS_LISTEN is set.
 */
import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';
import type { Logger as PinoLogger } from 'pino';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

export interface TemporalRuntimeOptions {
  /** Lowest SDK level passed on (RUNNERFLOW_SDK_LOG_LEVEL; WARN by default: the SDK is chatty at INFO). */
  level?: LogLevel;
  /** host:port for the SDK's Prometheus exporter (RUNNERFLOW_SDK_METRICS_LISTEN); off when absent. */
  sdkMetricsListen?: string;
}

export function sdkRuntimeOptionsFromEnv(env: NodeJS.ProcessEnv = process.env, defaultLevel: LogLevel = 'WARN'): TemporalRuntimeOptions {
  const level = (env.RUNNERFLOW_SDK_LOG_LEVEL ?? defaultLevel).toUpperCase();
  if (!(level in PINO_LEVEL)) throw new Error(`RUNNERFLOW_SDK_LOG_LEVEL "${level}" is not one of ${Object.keys(PINO_LEVEL).join(', ')}`);
  return { level: level as LogLevel, ...(env.RUNNERFLOW_SDK_METRICS_LISTEN ? { sdkMetricsListen: env.RUNNERFLOW_SDK_METRICS_LISTEN } : {}) };
}

/** A Temporal SDK logger writing into pino. */
export function temporalLogger(log: PinoLogger, level: LogLevel = 'WARN'): DefaultLogger {
  const sdk = log.child({ component: 'temporal-sdk' });
  return new DefaultLogger(level, (entry: LogEntry) => sdk[PINO_LEVEL[entry.level]]({ ...entry.meta }, entry.message));
}

/**
 * Installs the runtime once per process, before any worker or native connection.
 * Shutdown is the caller's to order, so the SDK must not act on signals itself.
 */
export function installTemporalRuntime(log: PinoLogger, options: TemporalRuntimeOptions = {}): void {
  const level = options.level ?? 'WARN';
  Runtime.install({
    logger: temporalLogger(log, level),
    shutdownSignals: [],
    telemetryOptions: {
      logging: { forward: {}, filter: { core: level, other: level } },
      ...(options.sdkMetricsListen ? { metrics: { prometheus: { bindAddress: options.sdkMetricsListen, useSecondsForDurations: true } } } : {}),
    },
  });
}
