/**
 * A pool learns that a runner is gone from the runner's own last report. A runner
 * workflow that ends without one (an operator ran `temporal workflow terminate`, or
 * reset it past its last report) would be counted by its pool for good: an idle one
 * is never replaced, a busy one holds capacity, and neither shows up anywhere else,
 * since the liveness checks look at running runners only. This pass finds them.
 *
 * Its cost is flat in the number of runners: one query of the pool and one
 * visibility listing of the pool's open runners, then one describe per runner the
 * listing left out, which in a healthy pool is none or a few just started
 * (visibility lags the server by a moment). The describe, not the listing, decides.
 *
 * A runner whose workflow ended while its machine ran a job still has that machine,
 * and the job on it: counted as gone, its place would go to a new machine beside it,
 * one more than maxRunners until the job is done. So one GitHub calls busy is not
 * reported yet; the sweep leaves its machine alone for the same reason, and a later
 * look reports it once the job is done.
 *
 * The same listing finds the opposite gap: a runner whose machine runs (its `RunnerStatus`
 * says so) while the pool still counts it as starting. Its report of coming online was given
 * up (a report is tried for `poolReportTimeout` while the server cannot be reached), and nothing
 * else would tell the pool until the runner changes again: counted as starting, an idle runner
 * is never scaled down or replaced, and when it leaves it counts as a failed bootstrap. It is
 * asked to report again: one signal to each such runner and none to the others, so the look's
 * cost stays flat.
 */
import { log } from '@temporalio/activity';
import { type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { eachConcurrently } from '../domain/concurrency';
import type { GitHubPort } from '../github/port';
import type { InstanceMemo } from '../workflows/instance-options';
import { andQuery, quote } from '../api/temporal/visibility';
import { instanceNameFromWorkflowId, reportPhaseSignal, runnerWorkflowId, RUNNER_INSTANCE_WORKFLOW } from '../workflows/messages';
import { startedRunnersQuery, unheardRunnersQuery } from '../workflows/pool-messages';
import { RUNNER_NAME, RUNNER_POOL, RUNNER_STATUS } from '../workflows/search-attributes';
import { unheardRunnersAsked } from '../observability/metrics';
import { toActivityFailure } from './failures';
import { githubCallsBusy } from './remove-runner';
import { whileHeartbeating } from './heartbeat';

export interface FindEndedRunnersArgs {
  pool: string;
  /** The pool's own workflow, queried for the runners it counts. */
  poolWorkflowId: string;
}

export interface FindEndedRunnersResult {
  /** Runners the pool counts whose workflow has closed or no longer exists. */
  ended: string[];
  /** Runners the listing left out that were checked one by one. */
  checked: number;
  /** Ended runners GitHub still calls busy: their machines still run a job. */
  busy: string[];
  /** Runners whose machine runs that the pool counts as starting, asked to report again. */
  askedToReport: string[];
}

/** Describes per pass: a pool whose runners were terminated by the thousand is cleared over a few passes. */
const MAX_CHECKS_PER_PASS = 1_000;
const CHECK_CONCURRENCY = 20;

export function createPoolAuditActivities(deps: { client: Client; github?: { get(credentials: string): GitHubPort } }) {
  const { client } = deps;

  /** The pool's open runners, each with its instance status as visibility last saw it. */
  async function openRunners(pool: string): Promise<Map<string, string | undefined>> {
    const query = andQuery([`WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`, `ExecutionStatus = 'Running'`, `${RUNNER_POOL.name} = ${quote(pool)}`]);
    const open = new Map<string, string | undefined>();
    for await (const info of client.workflow.list({ query, pageSize: 1000 })) {
      const name = info.typedSearchAttributes.get(RUNNER_NAME) ?? instanceNameFromWorkflowId(info.workflowId);
      if (name) open.set(name, info.typedSearchAttributes.get(RUNNER_STATUS));
    }
    return open;
  }

  /** Asks the runners whose machine runs, but that the pool counts as starting, to report again. */
  async function askUnheardToReport({ pool, poolWorkflowId }: FindEndedRunnersArgs, open: Map<string, string | undefined>): Promise<string[]> {
    let unheard: string[];
    try {
      unheard = await client.workflow.getHandle(poolWorkflowId).query(unheardRunnersQuery);
    } catch (err) {
      // A pool whose worker predates the query; the next look asks again.
      log.warn('pool not asked for its starting runners', { pool, error: err instanceof Error ? err.message : String(err) });
      return [];
    }
    const asked = unheard.filter((name) => open.get(name) === 'running').slice(0, MAX_CHECKS_PER_PASS);
    await eachConcurrently(asked, CHECK_CONCURRENCY, async (name) => {
      await client.workflow
        .getHandle(runnerWorkflowId(name))
        .signal(reportPhaseSignal, {})
        .catch((err: unknown) => log.warn('runner not asked to report again', { runner: name, error: err instanceof Error ? err.message : String(err) }));
    });
    if (asked.length > 0) {
      unheardRunnersAsked.inc({ pool }, asked.length);
      log.info('runners whose machine runs that the pool counted as starting, asked to report again', { pool, runners: asked });
    }
    return asked.sort();
  }

  /**
   * `ended` when closed or gone, `busy` when closed but GitHub says its runner runs a job, and
   * `counted` when it runs, or a describe or a GitHub lookup failed and says nothing.
   */
  async function outcome(name: string): Promise<'ended' | 'busy' | 'counted'> {
    let memo: Partial<InstanceMemo> | undefined;
    try {
      const description = await client.workflow.getHandle(runnerWorkflowId(name)).describe();
      if (description.status.name === 'RUNNING') return 'counted';
      memo = description.memo as Partial<InstanceMemo> | undefined;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'ended';
      log.warn('runner not checked', { runner: name, error: err instanceof Error ? err.message : String(err) });
      return 'counted';
    }
    if (!deps.github || !memo?.github) return 'ended';
    try {
      return (await githubCallsBusy(deps.github, memo.github, name)) ? 'busy' : 'ended';
    } catch (err) {
      log.warn('runner not checked at GitHub', { runner: name, error: err instanceof Error ? err.message : String(err) });
      return 'counted';
    }
  }

  async function findEndedRunners(args: FindEndedRunnersArgs): Promise<FindEndedRunnersResult> {
    try {
      // Listed first: a runner started after the listing is left out of it, and its describe says it runs.
      const open = await openRunners(args.pool);
      const counted = await client.workflow.getHandle(args.poolWorkflowId).query(startedRunnersQuery);
      const suspects = counted.filter((name) => !open.has(name)).slice(0, MAX_CHECKS_PER_PASS);
      const ended: string[] = [];
      const busy: string[] = [];
      await eachConcurrently(suspects, CHECK_CONCURRENCY, async (name) => {
        const found = await outcome(name);
        if (found === 'ended') ended.push(name);
        else if (found === 'busy') busy.push(name);
      });
      const askedToReport = await askUnheardToReport(args, open);
      return { ended: ended.sort(), checked: suspects.length, busy: busy.sort(), askedToReport };
    } catch (err) {
      throw toActivityFailure(err);
    }
  }

  return {
    async findEndedRunners(args: FindEndedRunnersArgs): Promise<FindEndedRunnersResult> {
      // Heartbeats throughout, the listing and the pool's query included: a look whose worker
      // died is noticed within the pool's step heartbeat timeout.
      return whileHeartbeating(() => findEndedRunners(args));
    },
  };
}

export type PoolAuditActivities = ReturnType<typeof createPoolAuditActivities>;
