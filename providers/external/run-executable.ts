import { spawn } from 'node:child_process';

export interface ExecutableRun {
  executable: string;
  env: Record<string, string>;
  stdin?: string;
  /** Unset: the run ends only by itself or through `signal`. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type ExecutableResult =
  | { kind: 'exited'; code: number; stdout: string; stderr: string }
  | { kind: 'signalled'; signal: string; stdout: string; stderr: string }
  | { kind: 'timed-out'; stdout: string; stderr: string }
  | { kind: 'spawn-failed'; error: string };

const MAX_CAPTURE = 1024 * 1024;
/** After the executable exits, how long its leftover children may keep stdout open. */
const DRAIN_MS = 200;

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/**
 * Runs the executable once in its own process group, with exactly `env` as its
 * environment. On timeout or abort the whole group is killed, so a provider that
 * forked helpers does not leave them behind. Rejects only with the abort reason.
 */
export function runExecutable(run: ExecutableRun): Promise<ExecutableResult> {
  return new Promise((resolve, reject) => {
    if (run.signal?.aborted) {
      reject(run.signal.reason);
      return;
    }
    const child = spawn(run.executable, [], { env: run.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let settled = false;
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < MAX_CAPTURE) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-MAX_CAPTURE);
    });

    const finish = (result: ExecutableResult | { reject: unknown }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      run.signal?.removeEventListener('abort', onAbort);
      if ('reject' in result) reject(result.reject);
      else resolve(result);
    };
    const onAbort = () => {
      killGroup(child.pid);
      finish({ reject: run.signal!.reason });
    };
    run.signal?.addEventListener('abort', onAbort, { once: true });
    const timer =
      run.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killGroup(child.pid);
          }, run.timeoutMs);

    child.on('error', (err) => {
      killGroup(child.pid);
      finish({ kind: 'spawn-failed', error: err.message });
    });
    child.on('exit', (code, signal) => {
      const report = () => {
        if (timedOut) finish({ kind: 'timed-out', stdout, stderr });
        else if (code !== null) finish({ kind: 'exited', code, stdout, stderr });
        else finish({ kind: 'signalled', signal: signal ?? 'unknown', stdout, stderr });
      };
      const drain = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        report();
      }, DRAIN_MS);
      child.once('close', () => {
        clearTimeout(drain);
        report();
      });
    });
    // A provider that never reads stdin must not make us fail with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.stdin ?? '');
  });
}
