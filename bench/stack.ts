/**
 * The full stack for benches: GitHub simulator, HTTP API and worker in this
 * process, runners as simulated agents (hundreds cost almost nothing), pools
 * made through the REST API as an operator would. Production timings: with
 * simulated machines nothing fails, so no backoff is ever waited out.
 */
import { processStackRequest, startProcessStack, type ProcessStack } from '../devstack/process-stack';
import { apiRequest as api, SIMULATED_PROVIDER, startDevStack, type DevStack } from '../devstack/stack';
import type { PoolSettingsInput } from '../domain/pool';
import { FakeProviderControl } from '../providers/fake';
import { forceDeleteSignal, runnerWorkflowId } from '../workflows/messages';
import { poolStateQuery, poolWorkflowId, type PoolView } from '../workflows/pool-messages';
import { stopOnInterrupt, until, uniqueName } from './common';

export interface BenchStack extends DevStack {
  machines: FakeProviderControl;
}

/** What every bench stack runs with: its own controller id, no sweep or liveness schedules to add load. */
const benchConfig = () => ({ controllerId: uniqueName('bench-ctl'), sweep: { enabled: false }, liveness: { enabled: false } });

/**
 * `webhookConcurrency`: deliveries the simulated GitHub has in flight at once. GitHub itself
 * sends many more; a low figure makes the simulator, not runnerflow, pace a fast bench.
 */
export async function startBenchStack(temporalAddress: string, jobDurationMs: number, webhookConcurrency = 8, config: Record<string, unknown> = {}): Promise<BenchStack> {
  const stack = await startDevStack({
    temporalAddress,
    taskQueue: uniqueName('bench-tq'),
    machines: 'simulated',
    config: { ...benchConfig(), ...config },
    // Webhooks of different jobs delivered concurrently, as GitHub does.
    simulator: { jobDurationMs, webhookConcurrency, onError: () => undefined },
  });
  return Object.assign(stopOnInterrupt(stack), { machines: new FakeProviderControl(stack.machinesDir!) });
}

export { api };

/**
 * A stack whose worker and API each run in a process of their own, as deployed
 * (`npm run worker` beside the API): activities, the API and the simulator no
 * longer share one event loop with the workflow bridge.
 */
export interface ProcessBenchStack extends ProcessStack {
  processes: true;
}

export async function startProcessBenchStack(temporalAddress: string, jobDurationMs: number, webhookConcurrency = 8, config: Record<string, unknown> = {}): Promise<ProcessBenchStack> {
  const stack = await startProcessStack({
    temporalAddress,
    taskQueue: uniqueName('bench-tq'),
    workers: 1,
    apis: 1,
    config: { ...benchConfig(), ...config },
    simulator: { jobDurationMs, webhookConcurrency },
  });
  return Object.assign(stopOnInterrupt(stack), { processes: true as const });
}

type AnyBenchStack = DevStack | ProcessBenchStack;

function request(stack: AnyBenchStack, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  return 'processes' in stack ? processStackRequest(stack, method, path, body) : api(stack, method, path, body);
}

export interface BenchPool {
  name: string;
  repository: string;
  labels: string[];
}

/**
 * An ephemeral pool of its own repo and labels, so its jobs match no other pool; or, `like`
 * another, of that one's repo and labels and priority: a twin, which every job of one ties with.
 */
export async function createPool(stack: AnyBenchStack, maxRunners: number, like?: BenchPool): Promise<BenchPool> {
  const name = uniqueName('bench').toLowerCase().slice(0, 40);
  const repo = like ? like.repository.slice('bench/'.length) : name;
  const labels = like ? like.labels : ['self-hosted', 'linux', repo];
  const settings: PoolSettingsInput = {
    name,
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'bench', repo } },
    labels,
    provider: SIMULATED_PROVIDER,
    minIdleRunners: 0,
    maxRunners,
  };
  const res = await request(stack, 'POST', '/api/v1/pools', settings);
  if (res.status !== 201) throw new Error(`pool not created (${res.status}): ${JSON.stringify(res.body)}`);
  return { name, repository: `bench/${repo}`, labels };
}

export async function poolView(stack: AnyBenchStack, pool: BenchPool): Promise<PoolView> {
  return stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery);
}

/** Jobs of `ids` that GitHub (the simulator) shows completed. */
export function completedJobs(stack: AnyBenchStack, ids: Set<number>): number {
  return stack.sim.jobs().filter((j) => ids.has(j.id) && j.status === 'completed').length;
}

/**
 * Deletes the pool through the API and waits for it to close; runners still
 * there after `timeoutMs` are force-deleted so nothing outlives the bench.
 */
export async function removePool(stack: AnyBenchStack, pool: BenchPool, timeoutMs = 30_000): Promise<void> {
  const handle = stack.client.workflow.getHandle(poolWorkflowId(pool.name));
  const left = await poolView(stack, pool).catch(() => undefined);
  await request(stack, 'DELETE', `/api/v1/pools/${pool.name}`).catch(() => undefined);
  const closed = await until(async () => ((await handle.describe()).status.name === 'RUNNING' ? undefined : true), timeoutMs, 200);
  if (closed) return;
  for (const runner of left?.runners ?? []) {
    await stack.client.workflow.getHandle(runnerWorkflowId(runner.name)).signal(forceDeleteSignal, { reason: 'bench cleanup' }).catch(() => undefined);
  }
  await handle.terminate('bench cleanup').catch(() => undefined);
}

/** Stops the stack (which removes the simulated machines' directory). */
export async function stopBenchStack(stack: BenchStack): Promise<void> {
  await stack.stop();
}

/**
 * Ends every workflow of a pool (the pool and its runners) at once with one
 * server-side batch operation: a bench with thousands of runners would
 * otherwise spend minutes deleting them one by one. Only for benches, whose
 * machines are simulated and vanish with the stack.
 */
export async function terminatePoolWorkflows(stack: { client: DevStack['client']; namespace: string }, pool: Pick<BenchPool, 'name'>, timeoutMs = 120_000): Promise<boolean> {
  const query = `RunnerPool = "${pool.name}" AND ExecutionStatus = "Running"`;
  const deadline = Date.now() + timeoutMs;
  // Again until none is left: a start the pool had in flight can land after a batch's snapshot.
  while (Date.now() < deadline) {
    if ((await stack.client.workflow.count(query)).count === 0) return true;
    await stack.client.workflowService
      .startBatchOperation({
        namespace: stack.namespace,
        jobId: uniqueName('bench-cleanup'),
        visibilityQuery: query,
        reason: 'bench cleanup',
        terminationOperation: {},
      })
      // The server runs few batches at once: the earlier one is still at work, wait for it.
      .catch((err: unknown) => console.error(`clean-up batch not started yet: ${err instanceof Error ? err.message : String(err)}`));
    await until(async () => ((await stack.client.workflow.count(query)).count === 0 ? true : undefined), Math.min(30_000, Math.max(0, deadline - Date.now())), 1_000);
  }
  return (await stack.client.workflow.count(query)).count === 0;
}
