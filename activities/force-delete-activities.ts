/**
 * The forced delete's one step, run as a local activity so the instance
 * workflow can close within its bound even when the provider hangs:
 *
 * 1. one provider delete and one GitHub removal, together bounded by
 *    `boundMs` (a working provider confirms within it; a hanging one is left).
 *    Either is skipped when the graceful delete already settled it: GitHub
 *    removed, or a provider delete left unanswered for longer than the bound;
 * 2. when the provider did not confirm, a machineCleanup workflow is started
 *    (idempotent by its id, `cleanup/<name>`) that retries the delete with the
 *    usual backoff until the machine is gone, marked RunnerLeaked meanwhile.
 *    A create cut off by the forced delete counts as unconfirmed even when the
 *    provider found no machine: the clean-up watches for the one it may still make.
 *
 * Started here, through the client, rather than as a child of the closing
 * instance: a child started with ABANDON is not reliably started when the
 * parent closes in the same task, and a local activity's result is recorded
 * before the workflow goes on, so a crash in between only repeats the step.
 */
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { ProviderPort } from '../providers/port';
import { takesPoolExtraSpecs } from '../providers/external/provider';
import { isNotFound } from '../providers/port';
import { RunnerExtraSpecs } from './instance-activities';
import { cleanupSearchAttributes, cleanupWorkflowId, MACHINE_CLEANUP_WORKFLOW, type MachineCleanupInput } from '../workflows/cleanup-messages';
import { removeRunnerAtGitHub, type GitHubClients } from './remove-runner';
import { reportErrorText } from './failures';

export interface ForceDeleteDeps {
  controllerId: string;
  providers: ReadonlyMap<string, ProviderPort>;
  github: GitHubClients;
  client: Client;
}

export interface ForceDeleteArgs extends Omit<MachineCleanupInput, 'githubRemoved'> {
  /** How long the provider and GitHub get before the machine is handed to its clean-up workflow. */
  boundMs: number;
  /** The graceful delete already dealt with GitHub: no removal is attempted here or in the clean-up. */
  githubRemoved?: boolean;
  /**
   * The graceful delete has asked the provider this long ago (at least the bound) and is not
   * confirmed: no second attempt is made, the machine goes straight to its clean-up workflow.
   */
  providerUnconfirmedMs?: number;
}

export interface ForceDeleteOutcome {
  /** The provider confirmed the machine is gone (or was never there). */
  machineGone: boolean;
  githubRemoved: boolean;
  /** Why the provider did not confirm; the clean-up workflow is then running. */
  error?: string;
  cleanupWorkflowId?: string;
}

type Attempt = { ok: true } | { ok: false; error: string };

/** Runs `work` with an abort signal, giving up (and aborting it) after `ms`. */
async function bounded(ms: number, work: (signal: AbortSignal) => Promise<unknown>): Promise<Attempt> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<Attempt>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`no answer within ${ms} ms`));
      resolve({ ok: false, error: `no answer within ${ms} ms` });
    }, ms);
  });
  const attempt = work(controller.signal).then(
    (): Attempt => ({ ok: true }),
    // The error goes into the activity's result, and so into workflow history.
    (err: unknown): Attempt => ({ ok: false, error: reportErrorText(err) }),
  );
  try {
    return await Promise.race([attempt, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Why the graceful delete has not confirmed, for the operator: the provider's last error as the
 * server recorded it on the pending attempt, or that it has not answered at all.
 */
async function lastDeleteFailure(client: Client, unconfirmedMs: number): Promise<string> {
  const unanswered = `the provider has not confirmed a delete asked for ${unconfirmedMs} ms ago`;
  try {
    const execution = Context.current().info.workflowExecution;
    if (!execution) return unanswered;
    const { raw } = await client.workflow.getHandle(execution.workflowId, execution.runId).describe();
    const pending = raw.pendingActivities?.find((a) => a.activityType?.name === 'deleteInstance');
    return pending?.lastFailure?.message || unanswered;
  } catch {
    // Only the message is at stake: the hand-over goes on without it.
    return unanswered;
  }
}

export function createForceDeleteActivities(deps: ForceDeleteDeps) {
  const runnerSpecs = new RunnerExtraSpecs();
  type Machine = Omit<ForceDeleteArgs, 'boundMs' | 'githubRemoved' | 'providerUnconfirmedMs'>;

  /** Starts the machine's clean-up workflow; idempotent by its id. */
  async function handOver(machine: Machine, githubRemoved: boolean): Promise<string> {
    const workflowId = cleanupWorkflowId(machine.name);
    const input: MachineCleanupInput = { ...machine, githubRemoved };
    try {
      await deps.client.workflow.start(MACHINE_CLEANUP_WORKFLOW, {
        workflowId,
        taskQueue: Context.current().info.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: cleanupSearchAttributes(machine),
      });
    } catch (err) {
      // Already started and finished by an earlier attempt of this step: the machine is in hand.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    return workflowId;
  }

  return {
    async forceDeleteMachine(args: ForceDeleteArgs): Promise<ForceDeleteOutcome> {
      const { boundMs, githubRemoved, providerUnconfirmedMs, ...machine } = args;
      // GitHub refusing because the runner is busy removed nothing: the clean-up is told so, and asks again.
      const unregistering = githubRemoved
        ? Promise.resolve<Attempt>({ ok: true })
        : bounded(boundMs, async () => {
            if ((await removeRunnerAtGitHub(deps.github, machine)) === 'busy') throw new Error('GitHub calls the runner busy; its registration stays');
          });

      if (providerUnconfirmedMs !== undefined) {
        // Known not confirmed: hand over at once, and look up the provider's last word meanwhile.
        const handedOver = unregistering.then(async (unregistered) => ({ unregistered, workflowId: await handOver(machine, unregistered.ok) }));
        const [error, { unregistered, workflowId }] = await Promise.all([lastDeleteFailure(deps.client, providerUnconfirmedMs), handedOver]);
        return { machineGone: false, githubRemoved: unregistered.ok, error, cleanupWorkflowId: workflowId };
      }

      const provider = deps.providers.get(machine.provider);
      const [deleted, unregistered] = await Promise.all([
        provider
          ? bounded(boundMs, async (signal) => {
              try {
                // The extra specs the machine was made with: elsewhere a region-aware provider would
                // answer "not found", which reads as confirmed gone, and the machine would leak.
                const extraSpecs = takesPoolExtraSpecs(provider) ? await runnerSpecs.of(deps.client, machine.name) : undefined;
                await provider.deleteInstance(machine.providerId ?? machine.name, { controllerId: deps.controllerId, poolId: machine.pool, signal, ...(extraSpecs ? { extraSpecs } : {}) });
              } catch (err) {
                if (!isNotFound(err)) throw err;
              }
            })
          : Promise.resolve<Attempt>({ ok: false, error: `provider "${machine.provider}" is not configured on this worker` }),
        unregistering,
      ]);
      if (deleted.ok && machine.createMayLandWithinMs === undefined) return { machineGone: true, githubRemoved: unregistered.ok };
      // A provider that found no machine while a create was cut off has not confirmed anything:
      // the create may still make one, which the clean-up then deletes.
      const error = deleted.ok ? 'a create was under way when the delete was forced; it may still make the machine' : deleted.error;
      return { machineGone: false, githubRemoved: unregistered.ok, error, cleanupWorkflowId: await handOver(machine, unregistered.ok) };
    },
  };
}

export type ForceDeleteActivities = ReturnType<typeof createForceDeleteActivities>;
