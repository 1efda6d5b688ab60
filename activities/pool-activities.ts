/**
 * How a pool starts its runner workflows: through the client, from an
 * activity, rather than as child workflows. A child start is a task the
 * server runs later and then records in the pool's history (initiated,
 * started, completed: three events per runner, each a write to the one pool
 * workflow every job already passes through); measured under load, children
 * started up to a minute and a half after the pool asked. A direct start is one
 * call that is done when it returns, and the pool's history gets three events
 * per batch of runners instead of three per runner. Idempotent by workflow id (`runner/<name>`, the name chosen
 * deterministically by the pool), so a retried or replayed step starts nothing
 * twice.
 */
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, isGrpcServiceError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { SignalBatcher } from '../api/signal-batcher';
import { instanceStartOptions } from '../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW, type RunnerInstanceInput } from '../workflows/messages';
import { poolWorkflowId, runnersChangedSignal, type RunnerChangedArgs } from '../workflows/pool-messages';

export interface StartRunnersArgs {
  runners: RunnerInstanceInput[];
}

export interface StartRunnersResult {
  /** Runners whose workflow could not be started for a reason a retry will not fix. */
  notStarted: { name: string; error: string }[];
}

/** gRPC codes worth retrying the whole step for: the server was briefly unreachable or slow. */
const TRANSIENT = new Set([4, 8, 14]);

export interface ReportToPoolArgs {
  pool: string;
  report: RunnerChangedArgs;
}

export function createPoolActivities(deps: { client: Client }) {
  /**
   * Runners tell their pool of every change that matters to it. Sent as a
   * workflow command, each report became a task the server carried out later
   * (measured: a large share still undelivered many seconds on, so the pool
   * counted runners long gone and held back new ones). Sent from here, a report
   * is one direct call, and the reports of every runner on this worker to one
   * pool go as one signal per round trip.
   */
  const toPools = new SignalBatcher<RunnerChangedArgs>((workflowId, reports) => deps.client.workflow.getHandle(workflowId).signal(runnersChangedSignal, { reports }));
  return {
    /** Done when the pool has the report, or the pool is gone (nothing left to tell). */
    async reportToPool({ pool, report }: ReportToPoolArgs): Promise<void> {
      try {
        await toPools.add(poolWorkflowId(pool), report);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },

    async startRunners({ runners }: StartRunnersArgs): Promise<StartRunnersResult> {
      const taskQueue = Context.current().info.taskQueue;
      const notStarted: StartRunnersResult['notStarted'] = [];
      const outcomes = await Promise.allSettled(
        // Eager start: the server may hand the new runner's first workflow task straight back to this
        // worker (the client shares its connection), skipping the task queue where, measured under
        // load, first tasks waited 3 to 30 s to be picked up.
        runners.map((input) => deps.client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(input), requestEagerStart: true })),
      );
      let transient: unknown;
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled' || outcome.reason instanceof WorkflowExecutionAlreadyStartedError) return;
        const err: unknown = outcome.reason;
        if (isGrpcServiceError(err) && TRANSIENT.has(err.code)) transient ??= err;
        else notStarted.push({ name: runners[i]!.name, error: err instanceof Error ? err.message : String(err) });
      });
      // Those that did start are found by id on the retry.
      if (transient) throw transient;
      return { notStarted };
    },
  };
}

export type PoolActivities = ReturnType<typeof createPoolActivities>;
