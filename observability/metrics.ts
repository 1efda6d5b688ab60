/**
 * The process-wide Prometheus registry. Every module registers its metrics here
 * so `GET /metrics` shows them all.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'runnerflow_process_' });

export const githubRateLimitRemaining = new Gauge({
  name: 'runnerflow_github_rate_limit_remaining',
  help: 'x-ratelimit-remaining of the last GitHub answer, per credentials and resource',
  labelNames: ['credentials', 'resource'],
  registers: [registry],
});

export const githubRequests = new Counter({
  name: 'runnerflow_github_requests_total',
  help: 'GitHub REST calls made, by operation and outcome',
  labelNames: ['operation', 'outcome'],
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: 'runnerflow_webhook_deliveries_total',
  help: 'GitHub webhook deliveries received, by event and result',
  labelNames: ['event', 'result'],
  registers: [registry],
});

export const providerOperations = new Histogram({
  name: 'runnerflow_provider_operation_seconds',
  help: 'Provider operation duration, by provider, operation and outcome',
  labelNames: ['provider', 'operation', 'outcome'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry],
});

export const sweepDeleted = new Counter({
  name: 'runnerflow_sweep_deleted_total',
  help: 'Machines deleted by the orphan sweep, by provider and reason',
  labelNames: ['provider', 'reason'],
  registers: [registry],
});
