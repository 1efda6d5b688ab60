/**
 * The sweep tests' rig (test/support/provider-rig.ts) with the sweep activities
 * and a clock the tests can move forward.
 */
import type { Client, ScheduleHandle, WorkflowHandle } from '@temporalio/client';
import { afterEach } from 'vitest';
import { createGitHubSweepActivities } from '../../activities/github-sweep-activities';
import { createSweepActivities, type SweepReport } from '../../activities/sweep-activities';
import { FakeProvider } from '../../providers/fake';
import { addProvider as addFakeProvider, useProviderRig, type ProviderRig, type TestProvider } from '../support/provider-rig';
import { forceDeleteSignal, RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { providerSweep } from '../../workflows/provider-sweep';
import { startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, uniqueName } from '../support/temporal';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';

export const CONTROLLER = 'test-controller';

export interface SweepRig extends ProviderRig {
  /** Sweep activities see this much later than the real clock (ms). */
  clockOffset: { ms: number };
}

/** The clock offset is reset after each test. */
export function useSweepRig(): SweepRig {
  const rig = useProviderRig<SweepRig>(
    (r) => ({
      ...createSweepActivities({ controllerId: CONTROLLER, providers: r.providers, client: r.client, namespace: 'default', now: () => Date.now() + r.clockOffset.ms, github: { get: () => r.github } }),
      ...createGitHubSweepActivities({ controllerId: CONTROLLER, client: r.client, namespace: 'default', github: { get: () => r.github }, now: () => Date.now() + r.clockOffset.ms }),
    }),
    { clockOffset: { ms: 0 } },
  );
  afterEach(() => {
    rig.clockOffset.ms = 0;
  });
  return rig;
}

export type { TestProvider };

/** A fake provider (or a subclass) under a name no other test uses. */
export function addProvider(rig: SweepRig, Provider: typeof FakeProvider = FakeProvider): TestProvider {
  return addFakeProvider(rig, 'sweep-provider', Provider);
}

export async function runSweep(rig: SweepRig, provider: string, gracePeriodMs: number): Promise<SweepReport> {
  return rig.client.workflow.execute(providerSweep, {
    taskQueue: rig.worker.taskQueue,
    workflowId: uniqueName(`sweep/${provider}`),
    args: [{ provider, gracePeriodMs }],
  });
}

/** Triggers the schedule once and returns the report of the sweep it started. */
export async function triggerSweep(client: Client, schedule: ScheduleHandle): Promise<SweepReport> {
  await schedule.trigger();
  const run = await eventually(async () => (await schedule.describe()).info.recentActions[0]?.action.workflow, 20_000, 'the triggered sweep');
  if (!run.workflowId.startsWith(`${schedule.scheduleId}-`)) throw new Error(`schedule ${schedule.scheduleId} started ${run.workflowId}`);
  return client.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result();
}

/**
 * Waits until visibility lists the runner under `condition` (e.g. closed, leaked).
 * list, not count: the dev server's SQLite visibility miscounts filtered queries.
 */
export async function waitUntilListed(rig: SweepRig, name: string, condition: string): Promise<void> {
  const query = `WorkflowType = '${RUNNER_INSTANCE_WORKFLOW}' AND RunnerName = '${name}' AND ${condition}`;
  await eventually(async () => {
    for await (const info of rig.client.workflow.list({ query })) if (info.workflowId === `runner/${name}`) return true;
    return false;
  }, 20_000, `visibility to list ${name} with ${condition}`);
}

/** Starts a runner on the given provider and waits until its machine is up. */
export async function runningInstance(rig: SweepRig, provider: string, name = uniqueName('owned')): Promise<WorkflowHandle> {
  const handle = await startInstance(rig.client, rig.worker.taskQueue, instanceInput(name, { provider }));
  await waitForStatus(handle, 'running');
  return handle;
}

/**
 * A forced delete against a provider whose deletes fail: the workflow ends with
 * the machine still there and RunnerLeaked set, and its clean-up workflow is
 * terminated (as an operator might). Then the provider is fixed.
 * Returns the machine's name once visibility shows the closed, leaked workflow.
 */
export async function leakMachine(rig: SweepRig, provider: TestProvider): Promise<string> {
  const name = uniqueName('leaked');
  const handle = await runningInstance(rig, provider.name, name);
  provider.fake.setFault('delete', { failForever: true, instance: name, message: 'provider credentials expired' });
  await handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
  const final = await handle.result();
  if (!final.leaked || !provider.fake.instance(name)) throw new Error(`expected ${name} to leak, got ${JSON.stringify(final)}`);
  // The machine's clean-up workflow would delete it once the provider works again; terminated,
  // it leaves the machine to the sweep, the safety net these tests are about.
  await rig.client.workflow.getHandle(cleanupWorkflowId(name)).terminate('leaving the machine to the sweep');
  // A delete attempt dispatched just before the termination may still be running on the worker;
  // cleared under it, the fault would let it delete the machine the sweep is to find. Calls are
  // recorded when they end: a second with none means none is in flight.
  await eventually(async () => {
    const before = provider.fake.calls('delete').length;
    await new Promise((r) => setTimeout(r, 1_000));
    return provider.fake.calls('delete').length === before ? true : undefined;
  }, 20_000, `the last delete attempt on ${name} to end`);
  provider.fake.clearFaults('delete');
  await waitUntilListed(rig, name, `ExecutionStatus != 'Running' AND RunnerLeaked = true`);
  return name;
}
