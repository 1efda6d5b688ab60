import type { Client, WorkflowHandle } from '@temporalio/client';
import { instanceStartOptions } from '../../workflows/instance-options';
import { stateQuery, type InstanceState, type RunnerInstanceInput } from '../../workflows/messages';
import { runnerInstance } from '../../workflows/runner-instance';
import { canTransition } from '../../domain/instance-status';
import { eventually } from '../support/temporal';

export async function startInstance(client: Client, taskQueue: string, input: RunnerInstanceInput): Promise<WorkflowHandle<typeof runnerInstance>> {
  return client.workflow.start(runnerInstance, { taskQueue, ...instanceStartOptions(input) });
}

export async function waitForStatus(handle: WorkflowHandle, status: InstanceState['status'], timeoutMs = 20_000): Promise<InstanceState> {
  return eventually(async () => {
    const state = await handle.query(stateQuery);
    return state.status === status ? state : undefined;
  }, timeoutMs, `status ${status}`);
}

/** Every recorded transition must be one the table allows, and they must chain. */
export function expectLegalChain(state: InstanceState): string[] {
  let current = 'pending_create';
  for (const tr of state.transitions) {
    if (tr.from !== current) throw new Error(`transition chain broken at ${tr.from} (expected ${current})`);
    if (!canTransition(tr.from, tr.to)) throw new Error(`illegal transition recorded: ${tr.from} -> ${tr.to}`);
    current = tr.to;
  }
  return state.transitions.map((tr) => tr.to);
}
