/** Read-only views for the dashboard: everything at a glance, and the orphan sweep. */
import { z } from 'zod';
import { unmatchedJobsQuery, unmatchedJobsWorkflowId } from '../../workflows/pool-messages';
import { poolOverview } from '../dashboard/pool-overview';
import { providerSweep } from '../dashboard/sweep-runs';
import { parseQuery } from '../http/query';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';
import { isNotFound } from '../temporal/errors';

const sweepsQuery = z.object({ runs: z.coerce.number().int().min(1).max(20).default(5) });

async function unmatchedCount(services: Services): Promise<number> {
  const handle = services.deps.client.workflow.getHandle(unmatchedJobsWorkflowId(services.deps.taskQueue));
  try {
    return (await services.bounded(() => handle.query(unmatchedJobsQuery))).length;
  } catch (err) {
    if (isNotFound(err)) return 0;
    throw err;
  }
}

export const overviewRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/api/v1/summary',
    auth: 'admin',
    doc: {
      tag: 'overview',
      summary:
        'Every pool with its desired size, runners counted as alive/idle/busy/starting/leaving and queued jobs; the number of unmatched jobs; where the Temporal Web UI is',
      responses: { 200: 'The summary' },
    },
    async handle({ services }) {
      const { config, client } = services.deps;
      const [entries, unmatchedJobs] = await Promise.all([services.pools.fetch(), unmatchedCount(services)]);
      const pools = await Promise.all(entries.map((entry) => poolOverview(services, entry)));
      return json({
        temporal: { namespace: client.options.namespace, webUiUrl: config.temporal.webUiUrl, taskQueue: services.deps.taskQueue },
        pools,
        unmatchedJobs,
      });
    },
  },
  {
    method: 'GET',
    path: '/api/v1/sweeps',
    auth: 'admin',
    doc: {
      tag: 'overview',
      summary: "Each provider's orphan sweep schedule (sweep/<provider>): paused or not, next run, and the results of its last runs",
      query: sweepsQuery,
      responses: { 200: 'The sweeps, one per configured provider' },
    },
    async handle({ url, services }) {
      const { runs } = parseQuery(url, sweepsQuery);
      const { config, client } = services.deps;
      const sweeps = await services.bounded(() => Promise.all(config.providers.map((p) => providerSweep(client, p.name, runs))));
      return json({ sweeps });
    },
  },
];
