import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { notFound } from '../http/errors';
import { isNotFound } from './errors';

/** Describes the current run of a workflow; 404 (with `what` in the message) when it does not exist or has ended. */
export async function describeRunning(client: Client, workflowId: string, what: string): Promise<WorkflowExecutionDescription> {
  let description: WorkflowExecutionDescription;
  try {
    description = await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (isNotFound(err)) throw notFound(`${what} does not exist`);
    throw err;
  }
  if (description.status.name !== 'RUNNING') throw notFound(`${what} does not exist (its workflow ended: ${description.status.name.toLowerCase()})`);
  return description;
}

/** Runs a call against a workflow; not found becomes 404 with `what` in the message. */
export async function orNotFound<R>(what: string, fn: () => Promise<R>): Promise<R> {
  try {
    return await fn();
  } catch (err) {
    if (isNotFound(err)) throw notFound(`${what} does not exist`);
    throw err;
  }
}
