/**
 * A local moto_server (PyPI `moto[server]`) for the EC2 provider tests, installed
 * once into a project-local venv and started on a free loopback port.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort } from '../../support/global-setup';

const ROOT = resolve(import.meta.dirname, '../../..');
const VENV = join(ROOT, '.cache/moto-venv');
const MOTO_SERVER = join(VENV, 'bin/moto_server');

/** Quick when the venv is already there; a half-made venv is rebuilt. */
export function ensureMotoInstalled(): string {
  if (existsSync(MOTO_SERVER)) return MOTO_SERVER;
  rmSync(VENV, { recursive: true, force: true });
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  execFileSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
  execFileSync(join(VENV, 'bin/pip'), ['install', '--quiet', 'moto[server]'], { stdio: 'inherit' });
  return MOTO_SERVER;
}


export interface MotoServer {
  endpoint: string;
  stop(): Promise<void>;
}

export interface MotoOptions {
  /**
   * Requests served before moto checks credentials (IAM's users and keys); unset, it never does.
   * Each request to a service counts, signed or not.
   */
  unauthenticatedRequests?: number;
}

export async function startMoto(options: MotoOptions = {}): Promise<MotoServer> {
  const server = ensureMotoInstalled();
  const port = await freePort();
  const env = { ...process.env, ...(options.unauthenticatedRequests !== undefined ? { INITIAL_NO_AUTH_ACTION_COUNT: String(options.unauthenticatedRequests) } : {}) };
  const child: ChildProcess = spawn(server, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'], env });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const res = await fetch(`${endpoint}/moto-api/`);
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    if (child.exitCode !== null) throw new Error(`moto_server exited during start:\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`moto_server did not answer on ${endpoint}:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
