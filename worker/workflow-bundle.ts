/**
 * What goes into the workflow bundle: the one place the worker (bundling from source at
 * start) and the tests and benches (bundling once, ahead) take it from, so that both run
 * the sandbox production runs.
 */
import { bundleWorkflowCode, type BundleOptions, type WorkerOptions } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const STACK_TRACES_OFF = fileURLToPath(new URL('../workflows/stack-traces-off.ts', import.meta.url));

/** See workflows/stack-traces-off.ts for what stack traces cost and why they are off by default. */
export function workflowBundlerOptions(stackTraces: boolean): NonNullable<WorkerOptions['bundlerOptions']> {
  return { preloadModules: stackTraces ? [] : [STACK_TRACES_OFF] };
}

/** The bundle as a worker configured with `temporal.workflowStackTraces: stackTraces` would build it. */
export async function bundleWorkflows(options: { stackTraces?: boolean; logger?: BundleOptions['logger'] } = {}): Promise<string> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    ...workflowBundlerOptions(options.stackTraces ?? false),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  return bundle.code;
}
