/**
 * Whether a run converged: what is left at the provider, at GitHub and in
 * Temporal once the dust settled, and how the jobs fared. Shared by the
 * scale-out test and the chaos campaign, which hold runs to the same targets.
 */
import type { Client } from '@temporalio/client';
import { quote } from '../api/temporal/visibility';
import type { GitHubSimulator } from '../github/simulator/server';
import type { FakeProviderControl } from '../providers/fake';
import { RUNNER_INSTANCE_WORKFLOW, runnerWorkflowId } from '../workflows/messages';
import { RUNNER_POOL_WORKFLOW } from '../workflows/pool-messages';
import { SCALE_SET_LISTENER_WORKFLOW } from '../workflows/scale-set-messages';

export interface RunOutcome {
  jobs: number;
  /** Jobs that got a runner and finished. */
  jobsRun: number;
  /** Jobs that finished with success (a job whose machine was killed under it ends cancelled). */
  jobsSucceeded: number;
  /** Jobs still queued or running at GitHub. */
  jobsNotRun: number[];
  /** Machines at the provider that no running runner workflow owns. */
  leakedMachines: string[];
  /** Runner names for which the provider made more than one machine. */
  duplicateMachines: string[];
  /** Runners still registered at GitHub. */
  registeredRunners: string[];
  /** Runner, pool and scale set listener workflows still open on the task queue. */
  openWorkflows: string[];
  /** Worst time from a job being queued to it starting on a runner. */
  worstQueueToStartMs: number;
}

async function runningIds(client: Client, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const info of client.workflow.list({ query })) ids.push(info.workflowId);
  return ids;
}

export async function measureOutcome(input: {
  client: Client;
  taskQueue: string;
  sim: GitHubSimulator;
  machines: FakeProviderControl;
  jobIds: ReadonlySet<number>;
}): Promise<RunOutcome> {
  const { client, taskQueue, sim, machines, jobIds } = input;
  const jobs = sim.jobs().filter((j) => jobIds.has(j.id));
  const open = await runningIds(
    client,
    `(WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)} OR WorkflowType = ${quote(RUNNER_POOL_WORKFLOW)} OR WorkflowType = ${quote(SCALE_SET_LISTENER_WORKFLOW)}) AND ExecutionStatus = 'Running' AND TaskQueue = ${quote(taskQueue)}`,
  );
  const liveRunners = new Set(open);
  const created = new Map<string, number>();
  for (const call of machines.calls('create')) {
    if (call.outcome === 'created' && call.instance) created.set(call.instance, (created.get(call.instance) ?? 0) + 1);
  }
  const ran = jobs.filter((j) => j.status === 'completed' && j.runnerName !== undefined);
  return {
    jobs: jobs.length,
    jobsRun: ran.length,
    jobsSucceeded: ran.filter((j) => j.conclusion === 'success').length,
    jobsNotRun: jobs.filter((j) => j.status !== 'completed' || j.runnerName === undefined).map((j) => j.id),
    leakedMachines: machines
      .instances()
      .filter((m) => !liveRunners.has(runnerWorkflowId(m.name)))
      .map((m) => m.name),
    duplicateMachines: [...created].filter(([, n]) => n > 1).map(([name]) => name),
    registeredRunners: sim.runners().map((r) => String(r.name)),
    openWorkflows: open,
    worstQueueToStartMs: Math.max(0, ...ran.map((j) => Date.parse(j.startedAt!) - Date.parse(j.createdAt))),
  };
}

/** True when nothing leaked, nothing is duplicated or stuck, and every job ran. */
export function converged(outcome: RunOutcome): boolean {
  return (
    outcome.jobsNotRun.length === 0 &&
    outcome.leakedMachines.length === 0 &&
    outcome.duplicateMachines.length === 0 &&
    outcome.registeredRunners.length === 0 &&
    outcome.openWorkflows.length === 0
  );
}
