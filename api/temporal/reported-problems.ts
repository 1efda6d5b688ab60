/**
 * Pools whose workflow tasks the server reports failing, from one visibility query: the
 * `TemporalReportedProblems` search attribute, which Temporal Server 1.28 and later set on a
 * workflow once its tasks have failed (or timed out) several times in a row
 * (`system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute`) and clear when one
 * completes. A check that must say which pools are stuck then asks only those, not every pool.
 */
import type { Client } from '@temporalio/client';
import { RUNNER_POOL_WORKFLOW } from '../../workflows/pool-messages';
import { andQuery, quote } from './visibility';

const PROBLEMS = ['category=WorkflowTaskFailed', 'category=WorkflowTaskTimedOut'];

/** The workflow ids of the task queue's running pools reported so; undefined when the server cannot say (one older than the attribute). */
export async function poolsWithReportedProblems(client: Client, taskQueue: string): Promise<Set<string> | undefined> {
  const query = andQuery([
    `WorkflowType = ${quote(RUNNER_POOL_WORKFLOW)}`,
    `ExecutionStatus = 'Running'`,
    `TaskQueue = ${quote(taskQueue)}`,
    `TemporalReportedProblems IN (${PROBLEMS.map(quote).join(', ')})`,
  ]);
  const reported = new Set<string>();
  try {
    for await (const info of client.workflow.list({ query })) reported.add(info.workflowId);
  } catch {
    return undefined;
  }
  return reported;
}
