/**
 * Starts a worker or API of a multi-process dev stack as its own OS process
 * and waits for its "ready" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const SCRIPTS = { worker: resolve(import.meta.dirname, 'worker.ts'), api: resolve(import.meta.dirname, 'api.ts') };

export interface StackProcess {
  role: 'worker' | 'api';
  child: ChildProcess;
  /** The API's base URL (APIs only). */
  url?: string;
  /** Resolves with the exit code (null after a signal). */
  exited: Promise<number | null>;
  /** Sends the signal and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function spawnStackProcess(role: StackProcess['role'], env: NodeJS.ProcessEnv, readyTimeoutMs = 90_000): Promise<StackProcess> {
  // e.g. RUNNERFLOW_STACK_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile a bench's processes (Node refuses those in NODE_OPTIONS).
  const nodeArgs = (env.RUNNERFLOW_STACK_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', TSX, SCRIPTS[role]], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((ready, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`${role} process not ready within ${readyTimeoutMs} ms:\n${stderr}`)), readyTimeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = /^ready ?(\S*)$/m.exec(out);
      if (line) {
        clearTimeout(timer);
        ready(line[1] ?? '');
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`${role} process exited during start (${code}):\n${stderr}`));
    });
  });
  return {
    role,
    child,
    ...(url ? { url } : {}),
    exited,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
