import { z } from 'zod';
import { scrubSecrets } from '../../observability/secret-scrub';
import { runnerStatusSignal } from '../../workflows/messages';
import { readValidJson } from '../http/body';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import { authenticateInstance, forbidden, signalLiveRun } from '../instance-auth';
import type { Services } from '../services';

const statusBody = z
  .object({
    status: z.enum(['installing', 'idle', 'failed']),
    message: z.string().max(4096).optional(),
    /** When the instance names itself, it must be the instance of the token. */
    instance: z.string().min(1).optional(),
    /** GARM's install script reports the runner's id with `idle`; accepted so its images work unchanged. */
    agent_id: z.number().int().optional(),
  })
  .strict();

export const callbackRoutes: Route<Services>[] = [
  {
    method: 'POST',
    path: '/api/v1/callbacks/status',
    auth: 'instance-token',
    doc: {
      tag: 'callbacks',
      summary: "Status report from a runner instance, authenticated by the instance's own token",
      body: statusBody,
      responses: {
        202: 'Status passed to the instance',
        400: 'The body is not valid JSON or not a status report (unknown status, unknown field)',
        401: 'Missing or invalid token',
        403: 'Token of another, deleted or replaced instance',
      },
    },
    async handle({ request, services }) {
      const claims = await authenticateInstance(request, services.deps.secrets.instanceTokenKey);
      const body = await readValidJson(request, statusBody, services.limits.apiBodyBytes, 'status callback');
      if (body.instance !== undefined && body.instance !== claims.instance) {
        throw forbidden(`this token belongs to instance ${claims.instance}, not ${body.instance}`);
      }
      const { instance: _instance, agent_id: _agentId, message, ...status } = body;
      // The machine's own words go into workflow history: a failing runner may quote what it
      // was started with (its JIT config, this token), so credentials are scrubbed first.
      const signal = { ...status, ...(message !== undefined ? { message: scrubSecrets(message) } : {}) };
      const deliver = () => signalLiveRun(services, claims, runnerStatusSignal, signal);
      // `idle` may ride on the runner's job start instead (api/idle-report-hold.ts); any other
      // report goes after a held `idle`, in the order the agent sent them.
      if (signal.status === 'idle') await services.idleReports.report(claims.instance, deliver);
      else {
        await services.idleReports.releaseBefore(claims.instance);
        await deliver();
      }
      services.deps.logger.info('instance status callback', { instance: claims.instance, status: body.status });
      return json({ instance: claims.instance, status: body.status }, 202);
    },
  },
];
