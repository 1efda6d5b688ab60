/**
 * On the real server: a workflow whose attempt to close was refused
 * (UnhandledCommand) refuses signals until its next workflow task completes.
 * The refusal is told apart by its cause, and runnerflow's client retries it
 * at a steady pace, so the signal lands as soon as the workflow takes signals
 * again. The workflow tasks are answered by hand, so the window is the test's.
 */
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTemporal, isBusyWorkflow } from '../../api/temporal/connection';
import { temporalAddress, uniqueName } from '../support/temporal';
import { signalsOf } from './history';

const { temporal } = proto;
const COMPLETE = temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION;

let raw: Connection;
let retrying: Connection;

beforeAll(async () => {
  // No retries at all: the test sees the server's first answer.
  raw = await Connection.connect({ address: temporalAddress(), interceptors: [] });
  retrying = await connectTemporal({ address: temporalAddress() });
});

afterAll(async () => {
  await raw.close();
  await retrying.close();
});

async function pollTask(taskQueue: string) {
  // A long poll: the server wants a deadline on it.
  const task = await raw.withDeadline(Date.now() + 20_000, () => raw.workflowService.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity: 'test' }));
  expect(task.taskToken?.length).toBeGreaterThan(0);
  return task.taskToken!;
}

describe('signals to a closing workflow', () => {
  it('are refused as BUSY_WORKFLOW, and the retrying client delivers them once the workflow takes signals again', async () => {
    const taskQueue = uniqueName('closing');
    const workflowId = uniqueName('closing-wf');
    const client = new Client({ connection: raw, namespace: 'default' });
    await client.workflow.start('anyWorkflow', { taskQueue, workflowId });
    const first = await pollTask(taskQueue);
    // A signal arrives while the task runs, so the task's attempt to complete the workflow is refused.
    await client.workflow.getHandle(workflowId).signal('early', {});
    await expect(
      raw.workflowService.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: first, identity: 'test', commands: [{ commandType: COMPLETE, completeWorkflowExecutionCommandAttributes: {} }] }),
    ).rejects.toThrow();
    const second = await pollTask(taskQueue);

    // While that next task is running, the workflow is closing: signals are refused, with the cause.
    const refusal: unknown = await client.workflow
      .getHandle(workflowId)
      .signal('refused', {})
      .then(() => undefined, (err: unknown) => (err as { cause?: unknown }).cause ?? err);
    expect(isGrpcServiceError(refusal)).toBe(true);
    expect(isBusyWorkflow(refusal as Parameters<typeof isBusyWorkflow>[0])).toBe(true);

    const started = Date.now();
    const delivered = new Client({ connection: retrying, namespace: 'default' }).workflow.getHandle(workflowId).signal('late', {});
    await new Promise((r) => setTimeout(r, 500));
    // The task completes without closing: the workflow takes signals again.
    await raw.workflowService.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: second, identity: 'test', commands: [] });
    await delivered;
    // Retried every 100 ms it lands a moment after the window ends; the SDK's rate-limit
    // backoff would not ask again before 1,360 ms (1.7 x 1 s, less 20 % jitter).
    expect(Date.now() - started).toBeLessThan(1_300);
    expect((await signalsOf(client, workflowId)).map((s) => s.name)).toContain('late');
    await client.workflow.getHandle(workflowId).terminate('test done');
  });
});
