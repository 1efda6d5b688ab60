/**
 * What goes into the workflow bundle: the one place the worker (bundling from source at
 * start) and the tests and benches (bundling once, ahead) take it from, so that both run
 * the sandbox production runs.
 */
import { bundleWorkflowCode, type BundleOptions, type WorkerOptions } from '@temporalio/worker';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

const BUNDLER_SCRIPT = fileURLToPath(new URL('./bundle-workflows.ts', import.meta.url));
/**
 * The child runs the bundler's TypeScript through tsx, named by path: the worker's own Node flags
 * are not passed on, as they need not include a loader (a test runner compiles in-process) and
 * may ask for things one process at a time (a profile, an inspector port).
 */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** A bundle written to a file of its own; `remove` deletes it once the worker has read it. */
export interface BundleFile {
  path: string;
  remove(): void;
}

/**
 * The bundle built in a short-lived process of its own, as a worker that bundles from source
 * loads it. Bundling is webpack's work: in the worker's own process it left about 200 MB of
 * heap and allocator memory behind for the worker's whole life (an idle worker's RSS 460 MB
 * against 255 MB with the same bundle built elsewhere; bench/README.md), which a worker
 * holding thousands of runners then carries on top of them.
 */
export async function bundleWorkflowsApart(options: { stackTraces?: boolean; timeoutMs?: number } = {}): Promise<BundleFile> {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-bundle-'));
  const path = join(dir, 'workflow-bundle.js');
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const args = ['--import', TSX_LOADER, BUNDLER_SCRIPT, path, ...(options.stackTraces ? ['--stack-traces'] : [])];
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, args, { timeout: options.timeoutMs ?? 180_000, maxBuffer: 4 * 1024 * 1024 }, (err, _stdout, stderr) => {
        if (!err) return resolve();
        const said = String(stderr).trim().split('\n').slice(-5).join('\n');
        reject(new Error(`bundling the workflows in a process of their own failed (${err.message.split('\n')[0]})${said ? `: ${said}` : ''}`));
      });
    });
  } catch (err) {
    remove();
    throw err;
  }
  return { path, remove };
}
