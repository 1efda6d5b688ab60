/** The dashboard's views (everything at a glance, the orphan sweep, liveness, webhook redelivery) and "sweep now". */
import { z } from 'zod';
import { providerLiveness } from '../dashboard/liveness-runs';
import { poolOverview } from '../dashboard/pool-overview';
import { credentialsRedelivery } from '../dashboard/redelivery-runs';
import { providerSweep, sweepNow } from '../dashboard/sweep-runs';
import { conflict, notFound } from '../http/errors';
import { parseQuery, queryInt } from '../http/query';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';
import { installationStatus } from '../installation-status';
import { readUnmatchedJobs } from '../temporal/unmatched-record';

/** How many of a schedule's last runs to show. */
const recentRunsQuery = z.object({ runs: queryInt(1, 20, 5) });

async function unmatchedCount(services: Services): Promise<number> {
  return (await readUnmatchedJobs(services.deps.client, services.deps.taskQueue, services.bounded)).length;
}

const LIVENESS_CHECKS = ['machines', 'github'] as const;

/** A read-only view of one kind of schedule and its last runs: the same query, bound and errors for each kind. */
function scheduleRoute(path: string, summary: string, listed: string, key: string, views: (deps: Services['deps'], runs: number) => Promise<unknown>[]): Route<Services> {
  return {
    method: 'GET',
    path,
    auth: 'admin',
    doc: { tag: 'overview', summary, query: recentRunsQuery, responses: { 200: listed, 400: 'runs is not a whole number from 1 to 20' } },
    async handle({ url, services }) {
      const { runs } = parseQuery(url, recentRunsQuery);
      return json({ [key]: await services.bounded(() => Promise.all(views(services.deps, runs))) });
    },
  };
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
      const [pools, unmatchedJobs] = await Promise.all([
        services.summaryPools.read(async () => Promise.all((await services.bounded(() => services.pools.fetch())).map((entry) => poolOverview(services, entry)))),
        unmatchedCount(services),
      ]);
      return json({
        temporal: { namespace: client.options.namespace, webUiUrl: config.temporal.webUiUrl, taskQueue: services.deps.taskQueue },
        pools,
        unmatchedJobs,
      });
    },
  },
  {
    method: 'GET',
    path: '/api/v1/status',
    auth: 'admin',
    doc: {
      tag: 'overview',
      summary:
        'The installation at a glance: Temporal, each GitHub credentials (taken, and their rate limit left), the workers polling the task queue and their builds, pools that cannot answer or take jobs, schedules missing, paused or failing, jobs no pool matched, machines whose delete is not confirmed; each problem with what to do, and the worst status of all',
      responses: { 200: 'The checks, each ok, warning or failing' },
    },
    handle: async ({ services }) => json(await installationStatus(services)),
  },
  scheduleRoute(
    '/api/v1/redeliveries',
    "Each credentials' redelivery schedule (redelivery/<credentials>): paused or not (and why), next run, and what its last passes did: failed webhook deliveries asked for again, given up, still followed, and the webhooks followed",
    'The redelivery schedules, one per configured credentials',
    'redeliveries',
    ({ config, client }, runs) => config.github.credentials.map((c) => credentialsRedelivery(client, c.name, runs)),
  ),
  scheduleRoute(
    '/api/v1/liveness',
    "Each provider's two liveness schedules (liveness/<provider> for machines, liveness/<provider>/github for runners): paused or not (and why), next run, and what their last passes found: runners told of a dead machine or an offline or missing runner, and runners asked to leave because their pool no longer runs or does not count them",
    'The liveness schedules, two per configured provider',
    'liveness',
    ({ config, client }, runs) => config.providers.flatMap((p) => LIVENESS_CHECKS.map((check) => providerLiveness(client, p.name, check, runs))),
  ),
  scheduleRoute(
    '/api/v1/sweeps',
    "Each provider's orphan sweep schedule (sweep/<provider>): paused or not, next run, and the results of its last runs",
    'The sweeps, one per configured provider',
    'sweeps',
    ({ config, client }, runs) => config.providers.map((p) => providerSweep(client, p.name, runs)),
  ),
  {
    method: 'POST',
    path: '/api/v1/sweeps/:provider',
    auth: 'admin',
    doc: {
      tag: 'overview',
      summary:
        "Sweep a provider now, through its schedule (so the run goes on with the lost-job look where the last one stopped); a sweep already running finishes first. Also when the schedule is paused: only this run happens",
      responses: { 202: 'The schedule was triggered', 404: 'No provider of that name is configured', 409: "The provider's sweep schedule does not exist yet (no worker has started with this provider)" },
    },
    async handle({ params, services }) {
      const { config, client } = services.deps;
      const provider = params.provider!;
      if (!config.providers.some((p) => p.name === provider)) {
        throw notFound(`provider "${provider}" is not configured (configured: ${config.providers.map((p) => p.name).join(', ') || 'none'})`);
      }
      const outcome = await services.bounded(() => sweepNow(client, provider));
      if (!outcome.triggered) {
        throw conflict(`there is no sweep schedule ${outcome.scheduleId} yet: a worker creates it when it starts with provider "${provider}"`, 'no_schedule');
      }
      return json({ provider, scheduleId: outcome.scheduleId, paused: outcome.paused }, 202);
    },
  },
];
