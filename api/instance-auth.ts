/**
 * How an instance proves who it is: its own token (minted by the create activity),
 * valid only while the workflow run it was minted for is alive.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import { runnerWorkflowId } from '../workflows/messages';
import { bearerToken } from './http/auth';
import { HttpError } from './http/errors';
import { InstanceTokenError, verifyInstanceToken, type InstanceTokenClaims } from './instance-token';
import type { Services } from './services';
import { isNotFound } from './temporal/errors';

export const forbidden = (message: string): HttpError => new HttpError(403, 'forbidden', message);

export async function authenticateInstance(request: Request, key: string): Promise<InstanceTokenClaims> {
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
 * The token must belong to the instance that is alive now: a token of a
 * deleted instance, or of an earlier instance of the same name, speaks for a
 * machine that no longer exists. A long-lived instance continues as new (same
 * machine, new run id), so a token minted by the first run of the live chain
 * still speaks for it. Callers address the run this returns.
 */
export async function requireLiveRun(services: Services, claims: InstanceTokenClaims): Promise<WorkflowExecutionDescription> {
  let description;
  try {
    description = await services.deps.client.workflow.getHandle(runnerWorkflowId(claims.instance)).describe();
  } catch (err) {
    if (isNotFound(err)) throw forbidden(`instance ${claims.instance} of this token does not exist`);
    throw err;
  }
  if (description.status.name !== 'RUNNING') throw forbidden(`instance ${claims.instance} of this token has been deleted`);
  const firstRunId = description.raw.workflowExecutionInfo?.firstRunId || description.runId;
  if (description.runId !== claims.runId && firstRunId !== claims.runId) {
    throw forbidden(`this token does not belong to the current run of instance ${claims.instance}`);
  }
  return description;
}

/**
 * Signals the live run of the token's instance. Nearly every callback comes
 * from the run that minted the token, so the signal goes to that run first:
 * the server takes a signal for a given run only while it is open, which is
 * the check `requireLiveRun` makes, without a describe round trip per runner
 * on the path of every runner coming online. Only when that run has ended
 * (deleted, replaced, or continued as new) is the live run looked up.
 */
export async function signalLiveRun<Args extends unknown[]>(services: Services, claims: InstanceTokenClaims, signal: SignalDefinition<Args>, ...args: Args): Promise<void> {
  const workflowId = runnerWorkflowId(claims.instance);
  try {
    await services.deps.client.workflow.getHandle(workflowId, claims.runId).signal(signal, ...args);
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const live = await requireLiveRun(services, claims);
  try {
    // Bound to the live run just checked, so a run that ends meanwhile is not mistaken for its successor.
    await services.deps.client.workflow.getHandle(workflowId, live.runId).signal(signal, ...args);
  } catch (err) {
    if (isNotFound(err)) throw forbidden(`instance ${claims.instance} of this token has been deleted`);
    throw err;
  }
}
