/**
 * machineCleanup, workflow ID `cleanup/<instance name>`: keeps GARM's promise
 * for a machine whose forced delete the provider did not confirm. The
 * runnerInstance workflow has already ended (a forced delete closes at once,
 * whatever the provider does); this one retries the provider delete with the
 * usual backoff (1 s doubling, capped at 5 minutes) until the machine is gone.
 * While it runs it carries `RunnerLeaked=true` (with the runner's name, pool and
 * provider), so `RunnerLeaked=true AND ExecutionStatus='Running'` lists exactly
 * the machines not yet confirmed gone; it clears the mark when done. A machine
 * whose create the forced delete cut off is not confirmed gone until that create
 * can no longer make it, so its clean-up keeps deleting until then. The sweep
 * stays the safety net for a clean-up that was terminated.
 */
import { log, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { InstanceActivities } from '../activities/instance-activities';
import type { MachineCleanupInput, MachineCleanupResult } from './cleanup-messages';
import { RUNNER_LEAKED, RUNNER_STATUS } from './search-attributes';
import { FAILURE_TYPES } from '../domain/failure-types';

export async function machineCleanup(input: MachineCleanupInput): Promise<MachineCleanupResult> {
  const t = input.timings;
  const remove = proxyActivities<InstanceActivities>({
    startToCloseTimeout: t.deleteAttemptTimeoutMs,
    heartbeatTimeout: t.heartbeatTimeoutMs,
    retry: {
      initialInterval: t.deleteInitialIntervalMs,
      backoffCoefficient: t.deleteBackoffCoefficient,
      maximumInterval: t.deleteMaxIntervalMs,
      nonRetryableErrorTypes: [FAILURE_TYPES.unknownProvider],
    },
  });
  // The registration matters less than the machine: a few tries, then the machine regardless.
  const github = proxyActivities<InstanceActivities>({
    startToCloseTimeout: t.githubAttemptTimeoutMs,
    retry: { initialInterval: t.githubInitialIntervalMs, maximumInterval: t.githubMaxIntervalMs, backoffCoefficient: 2, maximumAttempts: 3 },
  });

  const startedAt = Date.now();
  const unregister = () =>
    github
      .removeGitHubRunner({
        github: input.github,
        name: input.name,
        ...(input.githubRunnerId !== undefined ? { githubRunnerId: input.githubRunnerId } : {}),
        ...(input.scaleSetId !== undefined ? { scaleSetId: input.scaleSetId } : {}),
      })
      .catch((err: unknown) => log.warn('GitHub registration not removed', { runner: input.name, error: String(err) }));
  const deleteMachine = () => remove.deleteInstance({ provider: input.provider, name: input.name, pool: input.pool, ...(input.providerId ? { providerId: input.providerId } : {}) });

  if (!input.githubRemoved) await unregister();
  await deleteMachine();
  if (input.createMayLandWithinMs !== undefined) {
    // A cut-off create may still make the machine: delete again on the usual backoff until that
    // attempt can no longer be running. Deleting a machine that is not there costs one call.
    const until = startedAt + input.createMayLandWithinMs;
    for (let wait = t.deleteInitialIntervalMs; Date.now() < until; wait = Math.min(wait * t.deleteBackoffCoefficient, t.deleteMaxIntervalMs)) {
      await sleep(Math.min(wait, until - Date.now()));
      await deleteMachine();
    }
    // The attempt may also have registered the runner after the forced delete removed it.
    await unregister();
  }
  upsertSearchAttributes([
    { key: RUNNER_LEAKED, value: false },
    { key: RUNNER_STATUS, value: 'deleted' },
  ]);
  return { name: input.name, deletedAt: new Date().toISOString() };
}
