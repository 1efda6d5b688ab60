/**
 * How an instance proves who it is: its own token (minted by the create activity),
 * valid only while the workflow run it was minted for is alive.
 */
import { QueryRejectedError, WorkflowClient, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import type { QueryDefinition, SignalDefinition } from '@temporalio/common';
import { isLeaving } from '../domain/instance-status';
import { runnerWorkflowId, stateQuery, type InstanceState } from '../workflows/messages';
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

/**
 * The same client, except that the server itself refuses a query of a closed run
 * instead of having a worker replay it: a query of the token's run then also
 * proves that run alive, which `requireLiveRun` spends a describe round trip on.
 */
const openRunClients = new WeakMap<Client, WorkflowClient>();
function openRunsOnly(client: Client): WorkflowClient {
  let found = openRunClients.get(client);
  if (!found) {
    found = new WorkflowClient({ ...client.workflow.options, queryRejectCondition: 'NOT_OPEN' });
    openRunClients.set(client, found);
  }
  return found;
}

function queryOpenRun<R>(services: Services, instance: string, runId: string, query: QueryDefinition<R, []>): Promise<R> {
  return services.bounded(() => openRunsOnly(services.deps.client).getHandle(runnerWorkflowId(instance), runId).query(query));
}

/** Queries a run found live; one that closes meanwhile is a deleted instance, not a Temporal failure. */
export async function queryLiveRun<R>(services: Services, claims: InstanceTokenClaims, runId: string, query: QueryDefinition<R, []>): Promise<R> {
  try {
    return await queryOpenRun(services, claims.instance, runId, query);
  } catch (err) {
    if (err instanceof QueryRejectedError || isNotFound(err)) throw forbidden(`instance ${claims.instance} of this token has been deleted`);
    throw err;
  }
}

/**
 * The state of the token's instance, from its live run. As with signals, the run
 * that minted the token is asked first, so the usual case costs this one query
 * and no describe; only when that run has ended is the live run looked up.
 */
export async function liveInstanceState(services: Services, claims: InstanceTokenClaims): Promise<{ runId: string; state: InstanceState }> {
  try {
    return { runId: claims.runId, state: await queryOpenRun(services, claims.instance, claims.runId, stateQuery) };
  } catch (err) {
    if (!(err instanceof QueryRejectedError) && !isNotFound(err)) throw err;
  }
  const live = await requireLiveRun(services, claims);
  return { runId: live.runId, state: await queryLiveRun(services, claims, live.runId, stateQuery) };
}

/**
 * GARM's rule for the metadata service: credentials go to an instance only while
 * its runner is pending or installing. The token reaches the machine's boot script,
 * and from there every job that runs on it (in its environment, or in user data
 * any process can read back); once the runner is registered, a token still valid
 * would let a job fetch a registration token for the pool's whole scope and add
 * runners of its own that take other repositories' jobs. A job seen on the runner
 * counts as registered even if its status was later reported back to
 * `installing`, since a job can send that report itself.
 */
export function requireInstalling(instance: string, state: InstanceState): void {
  const details = { status: state.status, runnerStatus: state.runnerStatus };
  const registered =
    state.runnerStatus === 'idle' || state.runnerStatus === 'active' || state.runnerStatus === 'terminated' || state.jobId !== undefined;
  if (registered) {
    const why = state.jobId !== undefined ? `job ${state.jobId} started on it` : `its runner is ${state.runnerStatus}`;
    throw new HttpError(
      403,
      'instance_registered',
      `instance ${instance} has registered with GitHub (${why}): its token gets credentials only while the runner is installing`,
      details,
    );
  }
  if (isLeaving(state.status, state.runnerStatus) || (state.status !== 'creating' && state.status !== 'running')) {
    throw new HttpError(403, 'instance_leaving', `instance ${instance} is ${state.status} (runner ${state.runnerStatus}): its token gets no more credentials`, details);
  }
}
