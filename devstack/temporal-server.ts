import { Connection } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const DEV_SCRIPT = fileURLToPath(new URL('../temporal-dev.sh', import.meta.url));

export async function temporalAnswers(address: string, connectTimeoutMs = 2_000): Promise<boolean> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: connectTimeoutMs });
    await connection.close();
    return true;
  } catch {
    return false;
  }
}

/** The dev server script failed; what it printed (on the caller's stderr) says why. */
export class DevServerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DevServerError';
  }
}

/** Runs the project's dev server script (`start` waits until the frontend answers; `stop` ends it). */
export function devServer(command: 'start' | 'stop', port: string, stdio: 'inherit' | 'quiet' = 'inherit', env: NodeJS.ProcessEnv = process.env): void {
  try {
    execFileSync('bash', [DEV_SCRIPT, command], {
      stdio: stdio === 'inherit' ? 'inherit' : ['ignore', 'ignore', 'inherit'],
      env: { ...env, TEMPORAL_PORT: port },
    });
  } catch (err) {
    const { status, signal, code } = err as { status?: number | null; signal?: string | null; code?: string };
    const how = typeof status === 'number' ? `exited with code ${status}` : signal ? `was killed by ${signal}` : `could not run (${code ?? (err as Error).message})`;
    throw new DevServerError(`./temporal-dev.sh ${command} (port ${port}) ${how}; its output above says why`);
  }
}

export { freePort } from './free-port';
