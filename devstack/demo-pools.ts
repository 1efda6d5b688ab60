/**
 * The demo's pools are throwaway: each lives only as long as the `npm start`
 * that made it (its runners are registered with that process's GitHub
 * simulator). A demo that crashed or was killed leaves its pool behind, and
 * that pool would take the next demo's jobs with runners nobody can reach; so
 * every demo removes the demo pools of its installation (task queue) first.
 * A demo pool is recognised by its name prefix AND a marker in its memo, so an
 * operator's pool that happens to be called `demo-…` is never touched.
 */
import type { Client } from '@temporalio/client';
import { quote } from '../api/temporal/visibility';
import { within } from '../domain/concurrency';
import { RUNNER_INSTANCE_WORKFLOW, forceDeleteSignal, runnerWorkflowId } from '../workflows/messages';
import { RUNNER_POOL_WORKFLOW, deletePoolSignal, poolStateQuery, poolWorkflowId } from '../workflows/pool-messages';

export const DEMO_POOL_PREFIX = 'demo-';
/** Memo key set on demo pools only. */
export const DEMO_POOL_MARKER = 'runnerflowDemo';
export const demoPoolMemo = (): Record<string, unknown> => ({ [DEMO_POOL_MARKER]: true });

async function listIds(client: Client, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const info of client.workflow.list({ query })) ids.push(info.workflowId);
  return ids;
}

/** Names of the running demo pools of a task queue. */
export async function findDemoPools(client: Client, taskQueue: string): Promise<string[]> {
  const query = `WorkflowType = ${quote(RUNNER_POOL_WORKFLOW)} AND ExecutionStatus = 'Running' AND TaskQueue = ${quote(taskQueue)}`;
  const names: string[] = [];
  for await (const info of client.workflow.list({ query })) {
    const name = info.workflowId.slice('pool/'.length);
    if (info.workflowId.startsWith('pool/') && name.startsWith(DEMO_POOL_PREFIX) && info.memo?.[DEMO_POOL_MARKER] === true) names.push(name);
  }
  return names;
}

export interface RemoveDemoPoolsOptions {
  /** How long to wait for the pools' workflows to close before terminating what is left. */
  waitMs: number;
  log?: (message: string) => void;
}

/**
 * Force-deletes every runner of the pools, asks the pools to go, and waits
 * (bounded) for all of them to close; a pool still open then is terminated,
 * so it can no longer be offered jobs. Runners are found twice: the pool's own
 * book (strongly consistent, it includes runners whose start is in flight) and
 * visibility; after the pools are gone, visibility once more, for a runner whose
 * start landed after the first look. A forced delete always ends a runner.
 */
export async function removeDemoPools(client: Client, pools: string[], options: RemoveDemoPoolsOptions): Promise<void> {
  const reason = 'demo stopped';
  const deadline = Date.now() + options.waitMs;
  const forced = new Set<string>();
  const forceDelete = async (ids: string[]) => {
    const fresh = ids.filter((id) => !forced.has(id));
    for (const id of fresh) forced.add(id);
    await Promise.allSettled(fresh.map((id) => client.workflow.getHandle(id).signal(forceDeleteSignal, { reason })));
  };
  for (const pool of pools) {
    const handle = client.workflow.getHandle(poolWorkflowId(pool));
    // The pool first, so it makes no new runner after the lists below were taken.
    await handle.signal(deletePoolSignal, { reason }).catch(() => undefined);
    const booked = await within(
      handle.query(poolStateQuery).then((view) => view.runners.map((r) => runnerWorkflowId(r.name)), () => []),
      Math.max(100, Math.min(1_000, deadline - Date.now())),
    );
    const listed = await openRunnerIds(client, pool);
    const runners = [...new Set([...(booked ?? []), ...listed])];
    await forceDelete(runners);
    options.log?.(`removing demo pool "${pool}" and its ${runners.length} runner${runners.length === 1 ? '' : 's'}`);
  }
  for (const pool of pools) {
    const handle = client.workflow.getHandle(poolWorkflowId(pool));
    await untilClosed(handle, deadline, () => handle.terminate('demo pool left behind').catch(() => undefined));
  }
  for (const pool of pools) await forceDelete(await openRunnerIds(client, pool));
  for (const id of forced) await untilClosed(client.workflow.getHandle(id), deadline);
}

const openRunnerIds = (client: Client, pool: string): Promise<string[]> =>
  listIds(client, `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)} AND ExecutionStatus = 'Running' AND RunnerPool = ${quote(pool)}`);

/** Waits for a workflow to close; at the deadline, `onDeadline` (if any) and return. */
async function untilClosed(handle: { describe(): Promise<{ status: { name: string } }> }, deadline: number, onDeadline?: () => Promise<unknown>): Promise<void> {
  for (;;) {
    const status = await handle.describe().then(
      (d) => d.status.name,
      () => 'GONE',
    );
    if (status !== 'RUNNING') return;
    if (Date.now() > deadline) {
      await onDeadline?.();
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
