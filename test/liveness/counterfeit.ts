/**
 * Workflows whose history runnerflow's code cannot replay, made for real on the test server: a
 * counterfeit of the workflow's type (test/liveness/fixtures) makes its first task, on a worker
 * stopped once it has. The real code then fails every task it takes on a nondeterminism error,
 * as a pool's own history does once its commands were made across a query.
 */
import { fileURLToPath } from 'node:url';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { poolSettingsSchema, type PoolSettings } from '../../domain/pool';
import { poolMemoOf } from '../../workflows/pool-memo';
import { jobsQueuedSignal, poolWorkflowId, RUNNER_POOL_WORKFLOW, type RunnerPoolInput } from '../../workflows/pool-messages';
import { RUNNER_POOL } from '../../workflows/search-attributes';
import { eventually, FAST_TIMINGS, startTestWorker, temporalAddress, uniqueName } from '../support/temporal';
import { addProvider, type LivenessRig } from './helpers';

const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;

export interface CounterfeitOptions {
  /** The fixture module under test/liveness/fixtures. */
  fixture?: string;
  /**
   * The build the counterfeit worker says it is. Left out, its own (a hash of its bundle): the
   * history reads as written by other code, as after a deploy. Given the real worker's, it reads
   * as written by the very code that cannot replay it.
   */
  buildId?: string;
  /** Memo entries beside the pool's own (a glance, say). */
  memo?: Record<string, unknown>;
}

/** Starts a workflow whose first task a counterfeit of its type makes, on a worker stopped once it has. */
export async function withCounterfeitFirstTask<H extends WorkflowHandle>(taskQueue: string, start: () => Promise<H>, options: CounterfeitOptions = {}): Promise<H> {
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const counterfeit = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: fileURLToPath(new URL(`./fixtures/${options.fixture ?? 'counterfeit-workflows.ts'}`, import.meta.url)),
    ...(options.buildId ? { buildId: options.buildId } : {}),
  });
  const running = counterfeit.run();
  try {
    const handle = await start();
    await eventually(async () => (await handle.fetchHistory()).events?.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), 20_000, 'the counterfeit first task');
    return handle;
  } finally {
    counterfeit.shutdown();
    await running;
    await connection.close();
  }
}

/** A webhook pool of the provider whose name and last label come from `tag`, with no room for runners. */
export function poolSettingsFor(provider: string, tag: string): PoolSettings {
  return poolSettingsSchema.parse({
    name: uniqueName(tag).toLowerCase().slice(0, 40),
    github: { scope: { kind: 'repo', owner: 'acme', repo: 'widgets' } },
    labels: ['linux', tag],
    provider,
    maxRunners: 0,
  });
}

/** A pool with these settings whose first task the fixture's counterfeit made. */
export function counterfeitPool(client: Client, taskQueue: string, settings: PoolSettings, options: CounterfeitOptions = {}) {
  const input: RunnerPoolInput = { settings, timings: FAST_TIMINGS };
  const start = () =>
    client.workflow.start(RUNNER_POOL_WORKFLOW, {
      taskQueue,
      workflowId: poolWorkflowId(settings.name),
      args: [input],
      memo: { ...options.memo, ...poolMemoOf(settings) },
      typedSearchAttributes: [{ key: RUNNER_POOL, value: settings.name }],
    });
  return withCounterfeitFirstTask(taskQueue, start, options);
}

export const nondeterminismFailed = async (handle: WorkflowHandle): Promise<boolean> =>
  (await handle.fetchHistory()).events?.some((e) => e.workflowTaskFailedEventAttributes?.cause === WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR) ?? false;

/** The job each `stuckPool` is sent, which its reset run must still hold. */
export const STUCK_JOB = 515151;

/**
 * A pool on a provider of its own whose first task a counterfeit made, a runnerflow worker on its
 * task queue, and a job that makes the worker take a task and fail it on nondeterminism.
 */
export async function stuckPool(rig: LivenessRig, tag: string, options: { buildId?: string; memo?: Record<string, unknown>; beforeWorker?: (provider: string) => Promise<void> } = {}) {
  const provider = addProvider(rig).name;
  const settings = poolSettingsFor(provider, tag);
  const taskQueue = uniqueName(`tq-${tag}`);
  await options.beforeWorker?.(provider);
  const pool = await counterfeitPool(rig.client, taskQueue, settings, { ...(options.buildId ? { buildId: options.buildId } : {}), ...(options.memo ? { memo: options.memo } : {}) });
  const worker = await startTestWorker({ taskQueue, providers: rig.providers, github: rig.github });
  const done = async () => {
    await pool.terminate('test done').catch(() => undefined);
    await worker.stop();
  };
  try {
    await pool.signal(jobsQueuedSignal, { jobs: [{ jobId: STUCK_JOB, labels: settings.labels, repository: 'acme/widgets' }] });
    await eventually(() => nondeterminismFailed(pool), 20_000, 'a task failed on nondeterminism');
  } catch (err) {
    await done();
    throw err;
  }
  return { provider, settings, taskQueue, pool, stuckRun: pool.firstExecutionRunId, done };
}
