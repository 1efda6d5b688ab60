import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { createInstanceActivities, type InstanceActivityDeps } from '../activities/instance-activities';
import { lifecycleSinks } from './lifecycle-metrics';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface RunnerflowWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: InstanceActivityDeps;
  /** A prebuilt workflow bundle (tests build one per run); otherwise bundled from source at start. */
  workflowBundlePath?: string;
  shutdownGraceTimeMs?: number;
  /** Extra activities (pool and sweep steps) registered next to the instance ones. */
  extraActivities?: Record<string, (...args: never[]) => Promise<unknown>>;
}

export async function createRunnerflowWorker(options: RunnerflowWorkerOptions): Promise<Worker> {
  const workerOptions: WorkerOptions = {
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: { ...createInstanceActivities(options.activities), ...(options.extraActivities ?? {}) },
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 10_000,
    sinks: lifecycleSinks,
    ...(options.workflowBundlePath ? { workflowBundle: { codePath: options.workflowBundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
  };
  return Worker.create(workerOptions);
}
