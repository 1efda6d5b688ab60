/**
 * The liveness tests' rig (test/support/provider-rig.ts) with the liveness activities,
 * and instances brought to idle the way the reconciler sees them.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { createLivenessActivities, type LivenessActivityDeps, type LivenessArgs, type LivenessReport } from '../../activities/liveness-activities';
import type { InstanceTimings } from '../../domain/timings';
import type { InstanceSpec, RunnerInstanceInput } from '../../workflows/messages';
import { livenessCheck } from '../../workflows/liveness-check';
import { runnerInstance } from '../../workflows/runner-instance';
import { startInstance, waitForStatus } from '../instance/helpers';
import { addProvider as addFakeProvider, useProviderRig, type ProviderRig, type TestProvider } from '../support/provider-rig';
import { eventually, FAST_TIMINGS, instanceInput, uniqueName } from '../support/temporal';

export type LivenessRig = ProviderRig;

export function useLivenessRig(options: Pick<LivenessActivityDeps, 'stuckPoolAfterMs'> = {}): LivenessRig {
  return useProviderRig<LivenessRig>(
    (rig) => createLivenessActivities({ controllerId: 'test-controller', providers: rig.providers, github: { get: () => rig.github }, client: rig.client, namespace: 'default', poolQueryTimeoutMs: 1_000, ...options }),
    {},
  );
}

export type { TestProvider };

export function addProvider(rig: LivenessRig): TestProvider {
  return addFakeProvider(rig, 'live-provider');
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
