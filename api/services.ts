import type { QueryDefinition } from '@temporalio/common';
import { DEFAULT_LIMITS, type AppDeps, type AppLimits } from './deps';
import type { PoolOverview } from './dashboard/pool-overview';
import { IdleReportHold } from './idle-report-hold';
import { PoolDirectory } from './pool-directory';
import { StuckWorkflowAlarm } from './stuck-workflow-alarm';
import { TemporalJobSink } from './temporal-job-sink';
import { WebhookSignatures } from './webhooks/github';
import { SharedRead } from './shared-read';
import { orNotFound } from './temporal/running';
import { poolNameOf } from '../workflows/pool-messages';
import { instanceNameFromWorkflowId } from '../workflows/messages';

/** What route handlers use: the deps plus helpers built from them once per app. */
export interface Services {
  deps: AppDeps;
  limits: AppLimits;
  pools: PoolDirectory;
  sink: TemporalJobSink;
  /** Agents' `idle` reports waiting briefly for their runner's job start to carry them. */
  idleReports: IdleReportHold;
  /** Told of failed reads of pools and runners: one whose tasks keep failing gets its liveness pass at once. */
  stuckWorkflows: StuckWorkflowAlarm;
  /** Deliveries' signatures as this process saw them: the previous secret of a rotation, or none. */
  signatures: WebhookSignatures;
  /** The summary's pools, read once for the dashboards that ask at about the same time. */
  summaryPools: SharedRead<PoolOverview[]>;
  /** Runs a Temporal call bounded by the query timeout. */
  bounded<R>(fn: () => Promise<R>): Promise<R>;
  /** Queries a workflow within the query timeout; an unknown workflow is 404 naming `what`. */
  query<R>(workflowId: string, what: string, query: QueryDefinition<R, []>): Promise<R>;
}

export function createServices(deps: AppDeps): Services {
  const limits: AppLimits = { ...DEFAULT_LIMITS, ...deps.limits };
  const pools = new PoolDirectory(deps.client, limits.poolCacheMs, deps.taskQueue);
  const idleReports = new IdleReportHold({ holdMs: deps.config.api.idleReportHold });
  const stuckWorkflows = new StuckWorkflowAlarm({ client: deps.client, pools, logger: deps.logger, enabled: deps.config.liveness.enabled, minGapMs: limits.stuckPoolAskGapMs });
  const sink = new TemporalJobSink({
    client: deps.client,
    taskQueue: deps.taskQueue,
    pools,
    stuckWorkflows,
    logger: deps.logger,
    queryTimeoutMs: limits.queryTimeoutMs,
    paceMs: deps.config.api.intakePace,
    idleReports,
    ...(deps.config.api.intakeRelayAfter > 0 ? { relay: { afterMs: deps.config.api.intakeRelayAfter, idleMs: deps.config.api.intakeRelayIdle } } : {}),
  });
  const bounded = <R>(fn: () => Promise<R>): Promise<R> => deps.client.withDeadline(Date.now() + limits.queryTimeoutMs, fn);
  return {
    deps,
    limits,
    pools,
    sink,
    idleReports,
    stuckWorkflows,
    signatures: new WebhookSignatures(),
    summaryPools: new SharedRead(limits.summaryShareMs),
    bounded,
    query: async (workflowId, what, query) => {
      try {
        return await bounded(() => orNotFound(what, () => deps.client.workflow.getHandle(workflowId).query(query)));
      } catch (err) {
        const pool = poolNameOf(workflowId);
        if (pool !== undefined) stuckWorkflows.heardPool(pool, err);
        else if (instanceNameFromWorkflowId(workflowId) !== undefined) stuckWorkflows.heardRunner(workflowId, err);
        throw err;
      }
    },
  };
}
