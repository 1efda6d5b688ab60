import { metricsResponse } from '../../observability/metrics-server';
import { HttpError } from '../http/errors';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';

const HEALTH_TIMEOUT_MS = 3_000;

export const systemRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/healthz',
    auth: 'public',
    doc: { tag: 'system', summary: 'Liveness: answers 200 when Temporal is reachable', responses: { 200: 'Healthy', 503: 'Temporal unreachable' } },
    async handle({ services }) {
      const { client } = services.deps;
      try {
        await client.withDeadline(Date.now() + HEALTH_TIMEOUT_MS, () =>
          client.workflowService.describeNamespace({ namespace: client.options.namespace }),
        );
      } catch (err) {
        services.deps.logger.warn('health check: Temporal unreachable', { error: (err as Error).message });
        throw new HttpError(503, 'temporal_unavailable', `Temporal namespace ${client.options.namespace} is not reachable`);
      }
      return json({ status: 'ok', temporal: { namespace: client.options.namespace } });
    },
  },
  {
    method: 'GET',
    path: '/metrics',
    auth: 'public',
    doc: { tag: 'system', summary: 'Prometheus metrics', responses: { 200: 'Metrics in the Prometheus text format' } },
    handle: () => metricsResponse(),
  },
];
