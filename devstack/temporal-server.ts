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

/** Runs the project's dev server script (`start` waits until the frontend answers; `stop` ends it). */
export function devServer(command: 'start' | 'stop', port: string, stdio: 'inherit' | 'quiet' = 'inherit', env: NodeJS.ProcessEnv = process.env): void {
  execFileSync('bash', [DEV_SCRIPT, command], {
    stdio: stdio === 'inherit' ? 'inherit' : ['ignore', 'ignore', 'inherit'],
    env: { ...env, TEMPORAL_PORT: port },
  });
}

export { freePort } from './free-port';
