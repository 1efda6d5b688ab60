/**
 * Runner workflows whose tasks keep failing on a nondeterminism error, ended so that the
 * clean-up every ended runner gets takes over.
 *
 * A runner is signalled and queried too (`runner watch` polls its state), so the SDK behaviour
 * that can leave a pool's history unreplayable (pool-repair.ts) can reach a runner. Stuck, it
 * would hold its pool's capacity and its machine for good. It is found through the server's
 * `TemporalReportedProblems` search attribute, which the server sets once a workflow's tasks
 * have failed several times in a row: one visibility query per pass, whatever the number of
 * runners. It is terminated, not reset: the commands a reset drops may include its machine's
 * create, which the reset run would make again. Ended, it is cleaned up as a runner terminated
 * by hand is: its pool stops counting it, the sweep deletes its machine (not while GitHub calls
 * the runner busy) and removes its registration.
 */
import { log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { quote } from '../api/temporal/visibility';
import { eachConcurrently } from '../domain/concurrency';
import { reportErrorText } from './failures';
import { instanceNameFromWorkflowId, RUNNER_INSTANCE_WORKFLOW } from '../workflows/messages';

/** What the server records for a workflow whose tasks fail on nondeterminism. */
const NONDETERMINISM_PROBLEM = 'cause=WorkflowTaskFailedCauseNonDeterministicError';
const ENDS_AT_ONCE = 8;

export interface EndedRunner {
  name: string;
}

/** Terminates the provider's running runner workflows the server reports stuck on nondeterminism. */
export async function endStuckRunners(client: Client, provider: string, report: { stuckRunnersEnded: EndedRunner[]; failed: { target: string; error: string }[] }): Promise<void> {
  const query = [
    `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
    `ExecutionStatus = 'Running'`,
    `RunnerProvider = ${quote(provider)}`,
    `TemporalReportedProblems = ${quote(NONDETERMINISM_PROBLEM)}`,
  ].join(' AND ');
  const stuck: { workflowId: string; runId: string }[] = [];
  try {
    for await (const info of client.workflow.list({ query })) stuck.push({ workflowId: info.workflowId, runId: info.runId });
  } catch (err) {
    // A server older than the attribute says so here, every pass: the rest of the pass goes on.
    report.failed.push({ target: 'stuck runner workflows', error: reportErrorText(err) });
    return;
  }
  await eachConcurrently(stuck, ENDS_AT_ONCE, async ({ workflowId, runId }) => {
    const name = instanceNameFromWorkflowId(workflowId) ?? workflowId;
    try {
      await client.workflow.getHandle(workflowId, runId).terminate('runnerflow liveness: workflow tasks failing on a nondeterminism error; the sweep cleans up its machine and registration');
      report.stuckRunnersEnded.push({ name });
      log.warn('runner workflow stuck on a nondeterminism error terminated; its machine and registration go as any ended runner’s do', { provider, name });
    } catch (err) {
      report.failed.push({ target: name, error: reportErrorText(err) });
    }
  });
}
