/**
 * A worker with the sweep activities, and one fresh fake provider per test: the
 * providers map is read on every activity call, so tests add providers to it
 * while the worker runs and never see each other's machines or runners.
 */
import type { Client, Connection, ScheduleHandle, WorkflowHandle } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createGitHubSweepActivities } from '../../activities/github-sweep-activities';
import { createSweepActivities, type SweepReport } from '../../activities/sweep-activities';
import { GitHubDouble } from '../support/github-double';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { forceDeleteSignal, RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { providerSweep } from '../../workflows/provider-sweep';
import { startInstance, waitForStatus } from '../instance/helpers';
import { connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';

export const CONTROLLER = 'test-controller';

export interface SweepRig {
  client: Client;
  worker: TestWorker;
  providers: Map<string, ProviderPort>;
  /** Sweep activities see this much later than the real clock (ms). */
  clockOffset: { ms: number };
  /** GitHub as the instances and the sweep's GitHub side see it. */
  github: GitHubDouble;
}

/** One rig for the whole test file, filled in by beforeAll; the clock offset is reset after each test. */
export function useSweepRig(): SweepRig {
  const rig = { providers: new Map<string, ProviderPort>(), clockOffset: { ms: 0 }, github: new GitHubDouble() } as SweepRig;
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ client: rig.client, connection } = await connectClient());
    const sweep = createSweepActivities({
      controllerId: CONTROLLER,
      providers: rig.providers,
      client: rig.client,
      namespace: 'default',
      now: () => Date.now() + rig.clockOffset.ms,
    });
    const githubSweep = createGitHubSweepActivities({ client: rig.client, namespace: 'default', github: { get: () => rig.github }, now: () => Date.now() + rig.clockOffset.ms });
    rig.worker = await startTestWorker({ providers: rig.providers, github: rig.github, extraActivities: { ...sweep, ...githubSweep } });
  });
  afterEach(() => {
    rig.clockOffset.ms = 0;
  });
  afterAll(async () => {
    await rig.worker?.stop();
    await connection?.close();
  });
  return rig;
}

export interface TestProvider {
  name: string;
  stateDir: string;
  fake: FakeProviderControl;
}

/** A fake provider (or a subclass) under a name no other test uses. */
export function addProvider(rig: SweepRig, Provider: typeof FakeProvider = FakeProvider): TestProvider {
  const name = uniqueName('sweep-provider');
  const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-sweep-'));
  rig.providers.set(name, new Provider({ name, stateDir }));
  return { name, stateDir, fake: new FakeProviderControl(stateDir) };
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
