/**
 * The liveness tests' rig (test/support/provider-rig.ts) with the liveness activities,
 * and instances brought to idle the way the reconciler sees them.
 */
import { Client, type WorkflowHandle } from '@temporalio/client';
import { createLivenessActivities, type LivenessActivityDeps, type LivenessArgs, type LivenessReport } from '../../activities/liveness-activities';
import type { InstanceTimings } from '../../domain/timings';
import type { InstanceSpec, RunnerInstanceInput } from '../../workflows/messages';
import { livenessCheck } from '../../workflows/liveness-check';
import { runnerInstance } from '../../workflows/runner-instance';
import { startInstance, waitForStatus } from '../instance/helpers';
import { addProvider as addFakeProvider, useProviderRig, type ProviderRig, type TestProvider } from '../support/provider-rig';
import { eventually, FAST_TIMINGS, instanceInput, uniqueName } from '../support/temporal';

export interface LivenessRig extends ProviderRig {
  /**
   * Runs once, when a pass has listed the runners it will look at and before it looks: what
   * happens to them in between is what a pass on a busy system meets. Cleared once it has run.
   */
  afterNextListing?: (listed: string[]) => Promise<void>;
}

export function useLivenessRig(options: Pick<LivenessActivityDeps, 'stuckPoolAfterMs' | 'poolQueryTimeoutMs'> = {}): LivenessRig {
  return useProviderRig<LivenessRig>(
    (rig) => createLivenessActivities({ controllerId: 'test-controller', providers: rig.providers, github: { get: () => rig.github }, client: listingWithPause(rig), namespace: 'default', poolQueryTimeoutMs: 1_000, ...options }),
    {},
  );
}

/**
 * The passes' own client on the same server, whose listing of running instances hands over to
 * `rig.afterNextListing` before the pass goes on: a real list, a real pause, nothing answered
 * in the server's place.
 */
function listingWithPause(rig: LivenessRig): Client {
  const client = new Client({ connection: rig.client.connection, namespace: 'default' });
  const list = client.workflow.list.bind(client.workflow);
  client.workflow.list = ((options) => {
    const listing = list(options);
    return {
      ...listing,
      async *[Symbol.asyncIterator]() {
        const listed: string[] = [];
        for await (const info of listing) {
          listed.push(info.workflowId.slice('runner/'.length));
          yield info;
        }
        const pause = rig.afterNextListing;
        // The pass's listing of its provider's runners, not of pools or listeners.
        if (pause && /RunnerProvider = /.test(options?.query ?? '')) {
          rig.afterNextListing = undefined;
          await pause(listed);
        }
      },
    };
  }) as typeof client.workflow.list;
  return client;
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
