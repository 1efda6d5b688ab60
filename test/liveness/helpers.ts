/**
 * A worker with the liveness activities next to the instance ones, a fresh fake
 * provider per test (the providers map is read on every call) and one GitHub double.
 */
import type { Client, Connection, WorkflowHandle } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createLivenessActivities, type LivenessArgs, type LivenessReport } from '../../activities/liveness-activities';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import type { InstanceTimings } from '../../domain/timings';
import type { InstanceSpec, RunnerInstanceInput } from '../../workflows/messages';
import { livenessCheck } from '../../workflows/liveness-check';
import { runnerInstance } from '../../workflows/runner-instance';
import { startInstance, waitForStatus } from '../instance/helpers';
import { GitHubDouble } from '../support/github-double';
import { connectClient, eventually, FAST_TIMINGS, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';

export interface LivenessRig {
  client: Client;
  worker: TestWorker;
  providers: Map<string, ProviderPort>;
  github: GitHubDouble;
}

export function useLivenessRig(): LivenessRig {
  const rig = { providers: new Map<string, ProviderPort>(), github: new GitHubDouble() } as LivenessRig;
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ client: rig.client, connection } = await connectClient());
    const liveness = createLivenessActivities({ controllerId: 'test-controller', providers: rig.providers, github: { get: () => rig.github }, client: rig.client, namespace: 'default' });
    rig.worker = await startTestWorker({ providers: rig.providers, github: rig.github, extraActivities: liveness });
  });
  afterAll(async () => {
    await rig.worker?.stop();
    await connection?.close();
  });
  return rig;
}

export interface TestProvider {
  name: string;
  fake: FakeProviderControl;
}

export function addProvider(rig: LivenessRig): TestProvider {
  const name = uniqueName('live-provider');
  const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-liveness-'));
  rig.providers.set(name, new FakeProvider({ name, stateDir }));
  return { name, fake: new FakeProviderControl(stateDir) };
}

/** Grace periods short enough to wait out in a test. */
export const LIVENESS_TIMINGS: InstanceTimings = { ...FAST_TIMINGS, busyRunnerLostGraceMs: 1_500, runnerOfflineGraceMs: 500 };

/** An instance on the provider whose runner has come online (reported idle) and is listed as running. */
export async function idleInstance(
  rig: LivenessRig,
  provider: string,
  options: { spec?: Partial<InstanceSpec>; input?: Partial<RunnerInstanceInput>; name?: string } = {},
): Promise<{ name: string; handle: WorkflowHandle<typeof runnerInstance> }> {
  const name = options.name ?? uniqueName('live');
  const input = instanceInput(name, { provider, timings: LIVENESS_TIMINGS, ...options.input }, options.spec);
  const handle = await startInstance(rig.client, rig.worker.taskQueue, input);
  await waitForStatus(handle, 'running');
  await handle.signal('runnerStatus', { status: 'idle' });
  const github = rig.github.runners.get(name);
  if (github) github.status = 'online';
  await waitUntilListedRunning(rig, [name]);
  return { name, handle };
}

/** Visibility lags: the reconciler only sees instances once they are indexed as running. */
export async function waitUntilListedRunning(rig: LivenessRig, names: string[]): Promise<void> {
  const wanted = new Set(names);
  await eventually(async () => {
    const query = `WorkflowType = 'runnerInstance' AND ExecutionStatus = 'Running' AND RunnerStatus = 'running' AND RunnerName IN (${names.map((n) => `'${n}'`).join(', ')})`;
    const seen = new Set<string>();
    for await (const info of rig.client.workflow.list({ query })) seen.add(info.workflowId.slice('runner/'.length));
    return [...wanted].every((n) => seen.has(n));
  }, 20_000, `visibility to list ${names.length} running instances`);
}

export async function runLiveness(rig: LivenessRig, args: LivenessArgs): Promise<LivenessReport> {
  return rig.client.workflow.execute(livenessCheck, { taskQueue: rig.worker.taskQueue, workflowId: uniqueName(`liveness/${args.provider}`), args: [args] });
}
