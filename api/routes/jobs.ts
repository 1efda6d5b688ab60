import { z } from 'zod';
import { MAX_LABEL_LENGTH, MAX_POOL_LABELS } from '../../domain/pool';
import { findJob } from '../job-whereabouts';
import { candidatePools } from '../job-routing';
import { parseQuery } from '../http/query';
import { badRequest, notFound } from '../http/errors';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';
import { readUnmatchedJobs } from '../temporal/unmatched-record';

/** GitHub's job ids are positive integers, well within a double's exact range. */
const JOB_ID = /^[1-9][0-9]{0,15}$/;

const routeQuery = z.object({
  labels: z
    .string()
    .transform((text) => text.split(',').map((l) => l.trim()).filter((l) => l !== ''))
    .pipe(
      z
        .array(z.string().max(MAX_LABEL_LENGTH, `a label is at most ${MAX_LABEL_LENGTH} characters`))
        .min(1, 'give the labels of the job\'s runs-on, separated by commas')
        .max(MAX_POOL_LABELS, `a pool has at most ${MAX_POOL_LABELS} labels, so no pool could take more`),
    ),
  repository: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'must be owner/name')
    .optional(),
});

/** What `GET /api/v1/jobs/route` answers. */
export interface JobRoute {
  labels: string[];
  repository?: string;
  /** The enabled matching pools of the top priority: empty when none would take the job. */
  pools: string[];
  priority?: number;
  /** No pool is routed such a job: GitHub offers it to these pools' scale sets, whose listeners take it. */
  scaleSetPools?: string[];
  reason?: string;
}

/**
 * A scale set's job waits at GitHub, counted in the scale set's statistics, until its listener
 * acquires it for a runner: no pool holds it by id until then, so the answer says where to look.
 */
function scaleSetWaitNote(pools: readonly { name: string; memo?: { mode?: string; deleting?: true } }[]): string {
  const names = pools.filter((p) => p.memo?.mode === 'scaleSet' && !p.memo.deleting).map((p) => p.name);
  if (names.length === 0) return '';
  const shown = names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;
  return `; or it is a scale set's job waiting for a runner, which GitHub counts in the scale set until its listener acquires it: \`runnerflow pool show <pool>\` shows the waiting jobs of the scale-set pools ${shown}`;
}

const scaleSetReason = (pools: readonly { name: string; memo: { scaleSet?: { name: string } } }[]): string =>
  `a scale set takes it, not job routing: GitHub offers it to the listener of ${pools.map((p) => `scale set ${p.memo.scaleSet?.name ?? '?'} (pool ${p.name})`).join(', ')}`;

export const jobRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/api/v1/jobs/unmatched',
    auth: 'admin',
    doc: { tag: 'jobs', summary: 'Queued jobs no pool could take, newest last', responses: { 200: 'The unmatched jobs' } },
    async handle({ services }) {
      return json({ jobs: await readUnmatchedJobs(services.deps.client, services.deps.taskQueue, services.bounded) });
    },
  },
  {
    method: 'GET',
    path: '/api/v1/jobs/route',
    auth: 'admin',
    doc: {
      tag: 'jobs',
      summary:
        "Which pool a job with these labels (its `runs-on`, `self-hosted` implied) from this repository would go to now: `pools` are the enabled matching pools of the top priority (the job goes to the one with the most free capacity when it arrives); or `scaleSetPools`, the scale-set pools whose scale set GitHub offers it to (their listeners take it, not job routing); or `reason` says why none would take it",
      query: routeQuery,
      responses: { 200: 'Where such a job would go', 400: 'No labels, or a repository not written owner/name' },
    },
    async handle({ url, services }) {
      const { labels, repository } = parseQuery(url, routeQuery);
      const candidates = candidatePools(await services.pools.list(), labels, repository);
      const asked = { labels, ...(repository ? { repository } : {}) };
      const route: JobRoute =
        candidates.kind === 'none'
          ? { ...asked, pools: [], reason: candidates.reason }
          : candidates.kind === 'scaleSet'
            ? { ...asked, pools: [], scaleSetPools: candidates.pools.map((p) => p.name), reason: scaleSetReason(candidates.pools) }
            : { ...asked, pools: candidates.pools.map((p) => p.name), priority: candidates.pools[0]!.memo.priority };
      return json(route);
    },
  },
  {
    method: 'GET',
    path: '/api/v1/jobs/:id',
    auth: 'admin',
    doc: {
      tag: 'jobs',
      summary:
        'Where a GitHub job is: `running` on a runner of a pool (`finished` once that runner is done with it), `queued` in a pool with what it waits for (`waitingFor`: the pool at its maximum, runners starting, the pool disabled), or `unmatched` with the reason no pool took it',
      responses: { 200: 'The job', 400: 'Not a job id', 404: 'No pool counts the job and it is not among the unmatched jobs' },
    },
    async handle({ params, services }) {
      const id = params.id!;
      if (!JOB_ID.test(id)) throw badRequest(`job id must be GitHub's numeric job id (the number in the job's URL, .../job/<id>), got "${id}"`);
      const jobId = Number(id);
      const pools = await services.pools.list();
      const found = await findJob(
        {
          client: services.deps.client,
          pools,
          unmatched: () => readUnmatchedJobs(services.deps.client, services.deps.taskQueue, services.bounded),
          queryTimeoutMs: services.limits.queryTimeoutMs,
        },
        jobId,
      );
      if (!found) {
        throw notFound(
          `no pool counts job ${jobId} as queued or running, and it is not among the unmatched jobs: it has finished, or its queued webhook has not reached runnerflow (the sweep routes a job GitHub still has queued again after sweep.lostJobAge)${scaleSetWaitNote(pools)}`,
        );
      }
      return json(found);
    },
  },
];
