import { Client, type Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { WORKFLOW_CACHE_SIZE } from '../config/schema';
import { createForceDeleteActivities } from '../activities/force-delete-activities';
import { createGitHubSweepActivities } from '../activities/github-sweep-activities';
import { createInstanceActivities, type InstanceActivityDeps } from '../activities/instance-activities';
import { createPoolActivities, type PoolActivities, type ReportToPoolArgs } from '../activities/pool-activities';
import { createPoolAuditActivities } from '../activities/pool-audit-activities';
import { createRelayActivities } from '../activities/relay-activities';
import { createScaleSetActivities } from '../activities/scale-set-activities';
import { lifecycleSinks } from './lifecycle-metrics';
import { bundleWorkflowsApart, WORKFLOWS_PATH, workflowBundlerOptions, type BundleFile } from './workflow-bundle';

export interface RunnerflowWorkerOptions {
  /** The worker's own connection; runner workflows are started eagerly over it, which needs the worker's. */
  connection: NativeConnection;
  /**
   * runnerflow's connection (`connectTemporal`) for every other call the worker's activities make
   * to workflows: runners' reports to their pool, relayed jobs, clean-ups, sweeps. A pool whose
   * continue-as-new raced a signal refuses signals until its history is replayed (a few hundred
   * milliseconds); this connection asks again every 100 ms, where the worker's native connection
   * backs off as from a rate limit and delivered a relayed job or a report about a second late.
   */
  clientConnection: Connection;
  namespace: string;
  taskQueue: string;
  activities: InstanceActivityDeps;
  /** A prebuilt workflow bundle (tests build one per run, with worker/workflow-bundle.ts); otherwise bundled from source at start. */
  workflowBundlePath?: string;
  /** Stack traces in workflow code (`temporal.workflowStackTraces`) when bundling from source; a prebuilt bundle carries its own choice. */
  workflowStackTraces?: boolean;
  /** Told how the workflows were bundled from source, and when they could not be in a process of their own. */
  log?: (message: string) => void;
  warn?: (message: string) => void;
  shutdownGraceTimeMs?: number;
  /** Extra activities (pool and sweep steps) registered next to the instance ones. */
  extraActivities?: Record<string, (...args: never[]) => Promise<unknown>>;
  /** Workflows kept in memory between tasks; see WORKER_TUNING. */
  maxCachedWorkflows?: number;
  /**
   * What this worker takes from its task queue; both by default. A worker without
   * `workflows` runs only activities; one without `activities` runs workflow tasks and the
   * inline attempts within them (local activities) but takes no activity task.
   */
  roles?: { workflows?: boolean; activities?: boolean };
}

/**
 * Measured with bench/live-runners.ts and bench/queue-to-start.ts (bench/README.md):
 * - maxCachedWorkflows: an idle runner waits for days on signals alone, so it need
 *   not stay in memory; evicted, it is replayed from its short history when a
 *   signal comes. The pool workflows are asked often and stay cached (least recently
 *   used goes first) as long as the cache holds them all: `temporal.workflowCacheSize`
 *   (bench/many-pools.ts). The SDK's default sizes the cache from the heap, which let
 *   thousands of idle runners hold about half a megabyte each.
 * - slots: a runner's workflow task keeps its slot while its report to the pool
 *   (a local activity) runs; with the SDK's 40, new runners' first tasks waited
 *   23 s at 50 jobs/s while the workflow thread was mostly idle. 200 removed the
 *   wait; 500 changed no latency and cost RSS.
 * - pollers: the job-path breakdown put most of a job's wait between a runner
 *   workflow starting and its create activity starting, i.e. in activity
 *   dispatch. A fixed ten pollers bound how many tasks a worker can take per
 *   poll round trip; autoscaling pollers grow with the backlog the server reports.
 */
export const WORKER_TUNING = {
  maxCachedWorkflows: WORKFLOW_CACHE_SIZE,
  maxConcurrentWorkflowTaskExecutions: 200,
  maxConcurrentLocalActivityExecutions: 200,
  workflowTaskPollerBehavior: { type: 'autoscaling' },
  activityTaskPollerBehavior: { type: 'autoscaling' },
} as const satisfies Partial<WorkerOptions>;

export async function createRunnerflowWorker(options: RunnerflowWorkerOptions): Promise<Worker> {
  if (options.roles?.workflows === false && options.roles.activities === false) throw new Error('roles: a worker must take workflow tasks, activity tasks or both');
  const client = new Client({ connection: options.clientConnection, namespace: options.namespace });
  const eagerStarts = new Client({ connection: options.connection, namespace: options.namespace });
  // An inline delete tells the pool through the activity registered as `reportToPool`, whichever
  // that is (tests put stand-ins in its place), so both ways of telling a pool are one.
  const reportGone = (args: ReportToPoolArgs): Promise<void> => (activities.reportToPool as PoolActivities['reportToPool'])(args);
  const activities: Record<string, (...args: never[]) => Promise<unknown>> = {
    ...createInstanceActivities({ reportGone, ...options.activities }),
    ...createScaleSetActivities({ github: options.activities.github }),
    ...createPoolActivities({ client, eagerStarts }),
    ...createPoolAuditActivities({ client, github: options.activities.github }),
    ...createRelayActivities({ client }),
    ...createForceDeleteActivities({ ...options.activities, client }),
    // A deleted pool removes what it left at GitHub; the worker's sweep adds its job routing over these.
    ...createGitHubSweepActivities({ controllerId: options.activities.controllerId, client, namespace: options.namespace, github: options.activities.github }),
    ...(options.extraActivities ?? {}),
  };
  const runsWorkflows = options.roles?.workflows ?? true;
  const stackTraces = options.workflowStackTraces ?? false;
  // Bundled from source in a process of its own (worker/workflow-bundle.ts says why), read by
  // Worker.create and removed after. Should that process not run, the worker bundles itself.
  let bundle: BundleFile | undefined;
  if (runsWorkflows && !options.workflowBundlePath) {
    const startedAt = Date.now();
    try {
      bundle = await bundleWorkflowsApart({ stackTraces });
      options.log?.(`workflows bundled from source in a process of their own in ${Date.now() - startedAt} ms`);
    } catch (err) {
      options.warn?.(`${(err as Error).message}; bundling in the worker's own process instead`);
    }
  }
  const codePath = options.workflowBundlePath ?? bundle?.path;
  const workflows = codePath ? { workflowBundle: { codePath } } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: workflowBundlerOptions(stackTraces) };
  const workerOptions: WorkerOptions = {
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities,
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 10_000,
    ...WORKER_TUNING,
    maxCachedWorkflows: runsWorkflows ? (options.maxCachedWorkflows ?? WORKER_TUNING.maxCachedWorkflows) : 0,
    enableNonLocalActivities: options.roles?.activities ?? true,
    ...(runsWorkflows ? { sinks: lifecycleSinks, ...workflows } : {}),
  };
  try {
    return await Worker.create(workerOptions);
  } finally {
    bundle?.remove();
  }
}
