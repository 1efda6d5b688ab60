import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';
import { readUnmatchedJobs } from '../temporal/unmatched-record';

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
];
