import type { Client, WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { FakeFaultPlan, FakeOperation, FakeProviderControl } from '../../providers/fake';
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

export const EventType = proto.temporal.api.enums.v1.EventType;

export async function eventsOf(handle: WorkflowHandle) {
  return (await handle.fetchHistory()).events ?? [];
}

/** The activity types the workflow scheduled on the server, in order. */
export async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  return (await eventsOf(handle))
    .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
}

/** Runs `check` with the fake's `op` calls for `name` answering as `plan` says. */
export async function withFault(fake: FakeProviderControl, op: FakeOperation, name: string, plan: Omit<FakeFaultPlan, 'instance'>, check: () => Promise<void>): Promise<void> {
  fake.setFault(op, { ...plan, instance: name });
  try {
    await check();
  } finally {
    fake.clearFaults(op);
  }
}
