/**
 * A workflow held in the server's "closing" state, for tests: its workflow
 * tasks are answered by hand, an attempt to complete it is refused because a
 * signal came meanwhile (UnhandledCommand), and until the next task completes
 * the server refuses every signal to it, as it does to a busy pool whose
 * continue-as-new raced a signal.
 */
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, expect } from 'vitest';
import { connectTemporal } from '../../api/temporal/connection';
import { temporalAddress } from '../support/temporal';

const { temporal } = proto;
const COMPLETE = temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION;

export interface ClosingConnections {
  /** No retries at all: a test sees the server's first answer. */
  raw: Connection;
  /** runnerflow's own retries (api/temporal/connection.ts). */
  retrying: Connection;
}

export function useClosingConnections(): ClosingConnections {
  const conns = {} as ClosingConnections;
  beforeAll(async () => {
    conns.raw = await Connection.connect({ address: temporalAddress(), interceptors: [] });
    conns.retrying = await connectTemporal({ address: temporalAddress() });
  });
  afterAll(async () => {
    await conns.raw?.close();
    await conns.retrying?.close();
  });
  return conns;
}

export async function pollTask(raw: Connection, taskQueue: string): Promise<Uint8Array> {
  // A long poll: the server wants a deadline on it.
  const task = await raw.withDeadline(Date.now() + 20_000, () => raw.workflowService.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity: 'test' }));
  expect(task.taskToken?.length).toBeGreaterThan(0);
  return task.taskToken!;
}

/**
 * Starts `workflowType` and brings it into the closing state. Returns the token
 * of the task that is running meanwhile: `reopen` completes it without closing,
 * and the workflow takes signals again.
 */
export async function startClosing(raw: Connection, workflowType: string, taskQueue: string, workflowId: string): Promise<{ reopen(): Promise<void> }> {
  const client = new Client({ connection: raw, namespace: 'default' });
  await client.workflow.start(workflowType, { taskQueue, workflowId });
  const first = await pollTask(raw, taskQueue);
  // A signal arrives while the task runs, so the task's attempt to complete the workflow is refused.
  await client.workflow.getHandle(workflowId).signal('early', {});
  await expect(
    raw.workflowService.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: first, identity: 'test', commands: [{ commandType: COMPLETE, completeWorkflowExecutionCommandAttributes: {} }] }),
  ).rejects.toThrow();
  const second = await pollTask(raw, taskQueue);
  return {
    async reopen() {
      await raw.workflowService.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: second, identity: 'test', commands: [] });
    },
  };
}
