import { findJob } from '../job-whereabouts';
import { badRequest, notFound } from '../http/errors';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';
import { readUnmatchedJobs } from '../temporal/unmatched-record';

/** GitHub's job ids are positive integers, well within a double's exact range. */
const JOB_ID = /^[1-9][0-9]{0,15}$/;

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
    path: '/api/v1/jobs/:id',
    auth: 'admin',
    doc: {
      tag: 'jobs',
      summary:
        'Where a GitHub job is: `running` on a runner of a pool, `queued` in a pool with what it waits for (`waitingFor`: the pool at its maximum, runners starting, the pool disabled), or `unmatched` with the reason no pool took it',
      responses: { 200: 'The job', 400: 'Not a job id', 404: 'No pool counts the job and it is not among the unmatched jobs' },
    },
    async handle({ params, services }) {
      const id = params.id!;
      if (!JOB_ID.test(id)) throw badRequest(`job id must be GitHub's numeric job id (the number in the job's URL, .../job/<id>), got "${id}"`);
      const jobId = Number(id);
      const found = await findJob(
        {
          client: services.deps.client,
          pools: await services.pools.list(),
          unmatched: () => readUnmatchedJobs(services.deps.client, services.deps.taskQueue, services.bounded),
          queryTimeoutMs: services.limits.queryTimeoutMs,
        },
        jobId,
      );
      if (!found) {
        throw notFound(
          `no pool counts job ${jobId} as queued or running, and it is not among the unmatched jobs: it has finished, or its queued webhook has not reached runnerflow (the sweep routes a job GitHub still has queued again after sweep.lostJobAge)`,
        );
      }
      return json(found);
    },
  },
];
