import { unmatchedJobsWorkflowId, unmatchedJobsQuery } from '../../workflows/pool-messages';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import type { Services } from '../services';
import { isNotFound } from '../temporal/errors';

export const jobRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/api/v1/jobs/unmatched',
    auth: 'admin',
    doc: { tag: 'jobs', summary: 'Queued jobs no pool could take, newest last', responses: { 200: 'The unmatched jobs' } },
    async handle({ services }) {
      const handle = services.deps.client.workflow.getHandle(unmatchedJobsWorkflowId(services.deps.taskQueue));
      try {
        return json({ jobs: await services.bounded(() => handle.query(unmatchedJobsQuery)) });
      } catch (err) {
        // Nothing was ever unmatched: the workflow is only started by the first such job.
        if (isNotFound(err)) return json({ jobs: [] });
        throw err;
      }
    },
  },
];
