import { Connection } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const DEV_SCRIPT = fileURLToPath(new URL('../temporal-dev.sh', import.meta.url));

export async function temporalAnswers(address: string): Promise<boolean> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: 2_000 });
    await connection.close();
    return true;
  } catch {
    return false;
  }
}

/** Runs the project's dev server script (`start` waits until the frontend answers; `stop` ends it). */
export function devServer(command: 'start' | 'stop', port: string, stdio: 'inherit' | 'quiet' = 'inherit'): void {
  execFileSync('bash', [DEV_SCRIPT, command], {
    stdio: stdio === 'inherit' ? 'inherit' : ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, TEMPORAL_PORT: port },
  });
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}
