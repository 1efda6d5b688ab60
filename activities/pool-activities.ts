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
import { ServiceError, WorkflowExecutionAlreadyStartedError, isGrpcServiceError, type Client } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { SignalBatcher } from '../api/signal-batcher';
import { instanceStartOptions } from '../workflows/instance-options';
import { RUNNER_INSTANCE_WORKFLOW, type RunnerInstanceInput } from '../workflows/messages';
import { poolWorkflowId, runnersChangedSignal, type RunnerChangedArgs } from '../workflows/pool-messages';
import { reportErrorText } from './failures';
import { whileHeartbeating } from './heartbeat';
import { settleConcurrently } from '../domain/concurrency';

export interface StartRunnersArgs {
  runners: RunnerInstanceInput[];
}

export interface StartRunnersResult {
  /** Runners whose workflow could not be started for a reason a retry will not fix. */
  notStarted: { name: string; error: string }[];
}

/**
 * gRPC codes that say the server refused the start for good (a bad request, a
 * missing namespace, no permission). Anything else (unreachable, slow,
 * cancelled, an unknown failure) leaves it undecided: the server may have
 * started the workflow before the answer was lost, so the whole step is
 * retried and the ones that did start answer "already started". Calling an
 * undecided start "not started" would forget a runner that exists.
 */
const REFUSED = new Set([3, 5, 7, 9, 12, 16]);

/** The client wraps gRPC errors in a ServiceError whose cause is the gRPC error. */
function grpcCodeOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e)) return e.code;
  }
  return undefined;
}

/** Whether a failed call to the server (a start, a signal) is known not to have happened and never will (see REFUSED). */
export function refusedForGood(err: unknown): boolean {
  const code = grpcCodeOf(err);
  // An error that never reached the server (the input could not be encoded) will not change either.
  return code !== undefined ? REFUSED.has(code) : !(err instanceof ServiceError);
}

export interface ReportToPoolArgs {
  pool: string;
  report: RunnerChangedArgs;
}

/**
 * Runner starts under way at once in one `startRunners`. A pool's decision can start hundreds of
 * runners; started all at once, the server spent seconds on nothing but their starts while the
 * worker, its slots full of the first tasks eager start handed it, waited, and then the worker
 * worked through those tasks while the server waited, and first tasks that found no free slot
 * queued for seconds. A few dozen at a time keep both busy: measured with `live-runners.ts`
 * (1,000 runners, alternating), 49.3 – 49.8 runners/s at 35.5 – 36.2 core-ms each against
 * 37.1 – 47.0 at 37.9 – 42.8 with every start at once (bench/README.md).
 */
export const STARTS_IN_FLIGHT = 32;

/**
 * `client` carries the reports; `eagerStarts` the runner starts, on the worker's own connection,
 * which eager start needs (the same client when it is one).
 */
export function createPoolActivities(deps: { client: Client; eagerStarts?: Client }) {
  const starts = deps.eagerStarts ?? deps.client;
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
        if (err instanceof WorkflowNotFoundError) return;
        // Tried again for minutes while the server is out of reach; not when it has said no for good.
        if (refusedForGood(err)) throw ApplicationFailure.nonRetryable(`pool ${pool} refused the report: ${reportErrorText(err)}`, 'PoolReportRefused');
        throw err;
      }
    },

    async startRunners({ runners }: StartRunnersArgs): Promise<StartRunnersResult> {
      const taskQueue = Context.current().info.taskQueue;
      const notStarted: StartRunnersResult['notStarted'] = [];
      // Heartbeats say this worker is alive: one that dies mid-start is noticed within the
      // heartbeat timeout, not the step's whole time limit (see the pool's starter).
      const outcomes = await whileHeartbeating(() =>
        // Eager start: the server may hand the new runner's first workflow task straight back to this
        // worker (the client shares its connection), skipping the task queue where, measured under
        // load, first tasks waited 3 to 30 s to be picked up.
        settleConcurrently(runners, STARTS_IN_FLIGHT, (input) => starts.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(input), requestEagerStart: true })),
      );
      let undecided: unknown;
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled' || outcome.reason instanceof WorkflowExecutionAlreadyStartedError) return;
        const err: unknown = outcome.reason;
        if (refusedForGood(err)) notStarted.push({ name: runners[i]!.name, error: reportErrorText(err) });
        else undecided ??= err;
      });
      // Those that did start are found by id on the retry.
      if (undecided) throw undecided;
      return { notStarted };
    },
  };
}

export type PoolActivities = ReturnType<typeof createPoolActivities>;
