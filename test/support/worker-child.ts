import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { inject } from 'vitest';

/** Starts test/support/worker-process.ts on the task queue and resolves once it polls. */
export async function startWorkerProcess(taskQueue: string, env: { FAKE_DIR?: string; FAKE_INLINE_MS?: string; SIM_URL?: string; DIE_AFTER_REPORT?: string; DIE_AFTER_DELETE?: string }): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'worker-process.ts')], {
    env: { ...process.env, ...env, TEMPORAL_ADDRESS: inject('temporalAddress'), TASK_QUEUE: taskQueue, BUNDLE_PATH: inject('workflowBundlePath') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ready, fail) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && ready());
    child.once('exit', (code) => fail(new Error(`worker process exited early (${code})`)));
  });
  return child;
}
