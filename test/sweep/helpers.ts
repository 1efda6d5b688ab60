/**
 * A worker with the sweep activities, and one fresh fake provider per test: the
 * providers map is read on every activity call, so tests add providers to it
 * while the worker runs and never see each other's machines or runners.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSweepActivities, type SweepReport } from '../../activities/sweep-activities';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { forceDeleteSignal, RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { providerSweep } from '../../workflows/provider-sweep';
import { startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';

export const CONTROLLER = 'test-controller';

export interface SweepRig {
  worker: TestWorker;
  providers: Map<string, ProviderPort>;
  /** Sweep activities see this much later than the real clock (ms). */
  clockOffset: { ms: number };
}

export async function startSweepRig(client: Client): Promise<SweepRig> {
  const providers = new Map<string, ProviderPort>();
  const clockOffset = { ms: 0 };
  const sweep = createSweepActivities({ controllerId: CONTROLLER, providers, client, namespace: 'default', now: () => Date.now() + clockOffset.ms });
  const worker = await startTestWorker({ providers, extraActivities: sweep });
  return { worker, providers, clockOffset };
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

export async function runSweep(client: Client, rig: SweepRig, provider: string, gracePeriodMs: number): Promise<SweepReport> {
  return client.workflow.execute(providerSweep, {
    taskQueue: rig.worker.taskQueue,
    workflowId: uniqueName(`sweep/${provider}`),
    args: [{ provider, gracePeriodMs }],
  });
}

/** Starts a runner and waits until visibility lists it as running, so the sweep sees its owner. */
export async function runningInstance(client: Client, rig: SweepRig, provider: string, name = uniqueName('owned')): Promise<WorkflowHandle> {
  const handle = await startInstance(client, rig.worker.taskQueue, instanceInput(name, { provider }));
  await waitForStatus(handle, 'running');
  return handle;
}

/**
 * A forced delete against a provider whose deletes fail: the workflow ends with
 * the machine still there and RunnerLeaked set. Then the provider is fixed.
 * Returns once visibility shows the closed, leaked workflow.
 */
export async function leakMachine(client: Client, rig: SweepRig, provider: TestProvider): Promise<string> {
  const name = uniqueName('leaked');
  const handle = await runningInstance(client, rig, provider.name, name);
  provider.fake.setFault('delete', { failForever: true, instance: name, message: 'provider credentials expired' });
  await handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
  const final = await handle.result();
  if (!final.leaked || !provider.fake.instance(name)) throw new Error(`expected ${name} to leak, got ${JSON.stringify(final)}`);
  provider.fake.clearFaults('delete');
  const query = `WorkflowType = '${RUNNER_INSTANCE_WORKFLOW}' AND RunnerName = '${name}' AND ExecutionStatus != 'Running' AND RunnerLeaked = true`;
  // list, not count: the dev server's SQLite visibility miscounts filtered queries.
  await eventually(async () => {
    for await (const info of client.workflow.list({ query })) if (info.workflowId.endsWith(name)) return true;
    return false;
  }, 20_000, `visibility to show ${name} closed and leaked`);
  return name;
}
