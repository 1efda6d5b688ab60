/**
 * On the real server: a workflow whose attempt to close was refused
 * (UnhandledCommand) refuses signals until its next workflow task completes.
 * The refusal is told apart by its cause, and runnerflow's client retries it
 * at a steady pace, so the signal lands as soon as the workflow takes signals
 * again. The workflow tasks are answered by hand, so the window is the test's.
 */
import { Client, isGrpcServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { failFastWhenBusy, isBusyWorkflow, isBusyWorkflowError } from '../../api/temporal/connection';
import { uniqueName } from '../support/temporal';
import { startClosing, useClosingConnections } from './closing';
import { signalsOf } from './history';

const conns = useClosingConnections();

describe('signals to a closing workflow', () => {
  it('are refused as BUSY_WORKFLOW, and the retrying client delivers them once the workflow takes signals again', async () => {
    const taskQueue = uniqueName('closing');
    const workflowId = uniqueName('closing-wf');
    const client = new Client({ connection: conns.raw, namespace: 'default' });
    const closing = await startClosing(conns.raw, 'anyWorkflow', taskQueue, workflowId);

    // While that next task is running, the workflow is closing: signals are refused, with the cause.
    const refusal: unknown = await client.workflow
      .getHandle(workflowId)
      .signal('refused', {})
      .then(() => undefined, (err: unknown) => (err as { cause?: unknown }).cause ?? err);
    expect(isGrpcServiceError(refusal)).toBe(true);
    expect(isBusyWorkflow(refusal as Parameters<typeof isBusyWorkflow>[0])).toBe(true);

    const started = Date.now();
    const delivered = new Client({ connection: conns.retrying, namespace: 'default' }).workflow.getHandle(workflowId).signal('late', {});
    await new Promise((r) => setTimeout(r, 500));
    // The task completes without closing: the workflow takes signals again.
    await closing.reopen();
    await delivered;
    // Retried every 100 ms it lands a moment after the window ends; the SDK's rate-limit
    // backoff would not ask again before 1,360 ms (1.7 x 1 s, less 20 % jitter).
    expect(Date.now() - started).toBeLessThan(1_300);
    expect((await signalsOf(client, workflowId)).map((s) => s.name)).toContain('late');
    await client.workflow.getHandle(workflowId).terminate('test done');
  });

  it('are refused at once, recognisably, inside failFastWhenBusy; the same connection still retries outside it', async () => {
    const taskQueue = uniqueName('closing');
    const workflowId = uniqueName('closing-wf');
    const raw = new Client({ connection: conns.raw, namespace: 'default' });
    const closing = await startClosing(conns.raw, 'anyWorkflow', taskQueue, workflowId);
    const handle = new Client({ connection: conns.retrying, namespace: 'default' }).workflow.getHandle(workflowId);

    const started = Date.now();
    const refusal: unknown = await failFastWhenBusy(() => handle.signal('refused', {})).then(() => undefined, (err: unknown) => err);
    // No retry: the answer comes well inside the 100 ms the retrying client would wait before asking again.
    expect(Date.now() - started).toBeLessThan(500);
    expect(isBusyWorkflowError(refusal)).toBe(true);

    // Outside it, a call on the same connection waits for the workflow as before.
    const delivered = handle.signal('late', {});
    await new Promise((r) => setTimeout(r, 300));
    await closing.reopen();
    await delivered;
    expect((await signalsOf(raw, workflowId)).map((s) => s.name)).toEqual(expect.arrayContaining(['late']));
    expect((await signalsOf(raw, workflowId)).map((s) => s.name)).not.toContain('refused');
    expect(isBusyWorkflowError(new Error('some other failure'))).toBe(false);
    await raw.workflow.getHandle(workflowId).terminate('test done');
  });
});
