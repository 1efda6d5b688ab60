import { z } from 'zod';
import { runnerStatusSignal, runnerWorkflowId } from '../../workflows/messages';
import { bearerToken } from '../http/auth';
import { readValidJson } from '../http/body';
import { HttpError } from '../http/errors';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import { InstanceTokenError, verifyInstanceToken, type InstanceTokenClaims } from '../instance-token';
import type { Services } from '../services';
import { isNotFound } from '../temporal/errors';

const statusBody = z
  .object({
    status: z.enum(['installing', 'idle', 'failed']),
    message: z.string().max(4096).optional(),
    /** When the instance names itself, it must be the instance of the token. */
    instance: z.string().min(1).optional(),
  })
  .strict();

const forbidden = (message: string): HttpError => new HttpError(403, 'forbidden', message);

async function authenticateInstance(request: Request, key: string): Promise<InstanceTokenClaims> {
  const token = bearerToken(request);
  if (token === undefined) {
    throw new HttpError(401, 'unauthenticated', 'missing bearer token: send "Authorization: Bearer <instance token>"', undefined, {
      'www-authenticate': 'Bearer',
    });
  }
  try {
    return await verifyInstanceToken(token, key);
  } catch (err) {
    if (!(err instanceof InstanceTokenError)) throw err;
    throw new HttpError(401, 'invalid_token', err.message, { reason: err.reason }, { 'www-authenticate': 'Bearer error="invalid_token"' });
  }
}

/**
 * The token must belong to the run of the instance that is alive now: a token
 * of a deleted instance, or of an earlier run of the same name, speaks for a
 * machine that no longer exists.
 */
async function requireLiveRun(services: Services, claims: InstanceTokenClaims): Promise<void> {
  let description;
  try {
    description = await services.deps.client.workflow.getHandle(runnerWorkflowId(claims.instance)).describe();
  } catch (err) {
    if (isNotFound(err)) throw forbidden(`instance ${claims.instance} of this token does not exist`);
    throw err;
  }
  if (description.status.name !== 'RUNNING') throw forbidden(`instance ${claims.instance} of this token has been deleted`);
  if (description.runId !== claims.runId) throw forbidden(`this token does not belong to the current run of instance ${claims.instance}`);
}

export const callbackRoutes: Route<Services>[] = [
  {
    method: 'POST',
    path: '/api/v1/callbacks/status',
    auth: 'instance-token',
    doc: {
      tag: 'callbacks',
      summary: "Status report from a runner instance, authenticated by the instance's own token",
      body: statusBody,
      responses: { 202: 'Status passed to the instance', 401: 'Missing or invalid token', 403: 'Token of another, deleted or replaced instance' },
    },
    async handle({ request, services }) {
      const claims = await authenticateInstance(request, services.deps.secrets.instanceTokenKey);
      const body = await readValidJson(request, statusBody, services.limits.apiBodyBytes, 'status callback');
      if (body.instance !== undefined && body.instance !== claims.instance) {
        throw forbidden(`this token belongs to instance ${claims.instance}, not ${body.instance}`);
      }
      await requireLiveRun(services, claims);
      const { instance: _instance, ...signal } = body;
      try {
        // Bound to the run of the token, so a run that ends meanwhile is not mistaken for its successor.
        await services.deps.client.workflow.getHandle(runnerWorkflowId(claims.instance), claims.runId).signal(runnerStatusSignal, signal);
      } catch (err) {
        if (isNotFound(err)) throw forbidden(`instance ${claims.instance} of this token has been deleted`);
        throw err;
      }
      services.deps.logger.info('instance status callback', { instance: claims.instance, status: body.status });
      return json({ instance: claims.instance, status: body.status }, 202);
    },
  },
];
