/**
 * One real Temporal dev server per test run, on free ports with a throwaway
 * SQLite file, started through temporal-dev.sh so tests exercise the same
 * script operators use. The file lives in memory where the host has a
 * memory-backed filesystem (`scratchDir`): the run throws it away anyway, and
 * on a slow disk every commit would be a journal update the tests wait for.
 * The workflow bundle is built once here and shared.
 *
 * Every temporary directory a test makes (fake providers' state, configs,
 * workers' files) goes under one directory per run, through `TMPDIR`, which
 * the test workers and the processes they start inherit: the run removes it at
 * the end, where directories made one by one in the system's temporary
 * directory would pile up on a long-lived machine (a test may restart a worker
 * on a directory, so no test can remove its own before the run ends).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort } from '../../devstack/free-port';
import { scratchDir } from '../../devstack/scratch-dir';

export { freePort };

/** The environment that has temporal-dev.sh run a server on free ports, headless, with its state in `stateDir`. */
export async function devServerEnv(stateDir: string): Promise<NodeJS.ProcessEnv & { TEMPORAL_PORT: string }> {
  return {
    ...process.env,
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: 'off',
    TEMPORAL_HTTP_PORT: String(await freePort()),
    TEMPORAL_METRICS_PORT: String(await freePort()),
    TEMPORAL_STATE_DIR: stateDir,
    // Workflows whose tasks keep failing are marked after two failures instead of five, so tests wait seconds, not a minute.
    TEMPORAL_DYNAMIC_CONFIG: 'system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute=2',
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalCli: string;
    workflowBundlePath: string;
  }
}

const ROOT = resolve(import.meta.dirname, '../..');

let server: ChildProcess | undefined;
let stateDir: string | undefined;
let runTmpDir: string | undefined;

/**
 * Ports are picked free, but the server's own connections made while it starts can take
 * one of them as their local port before the server listens on it; it then exits with
 * "address already in use", and a start on other free ports is the remedy.
 */
const START_ATTEMPTS = 3;

async function startDevServer(cli: string, dir: string): Promise<{ child: ChildProcess; address: string }> {
  for (let attempt = 1; ; attempt++) {
    const env = await devServerEnv(dir);
    const child = spawn('bash', [join(ROOT, 'temporal-dev.sh'), 'foreground'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const address = `127.0.0.1:${env.TEMPORAL_PORT}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        execFileSync(cli, ['operator', 'cluster', 'health', '--address', address], { stdio: 'ignore' });
        return { child, address };
      } catch {
        if (child.exitCode !== null) break;
        if (Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(`Temporal dev server did not answer on ${address}:\n${stderr}`);
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    }
    if (attempt >= START_ATTEMPTS || !stderr.includes('address already in use')) throw new Error(`Temporal dev server exited during start:\n${stderr}`);
  }
}

export async function setup(project: TestProject): Promise<void> {
  runTmpDir = mkdtempSync(join(tmpdir(), 'runnerflow-test-run-'));
  process.env.TMPDIR = runTmpDir;
  const cli = execFileSync('bash', [join(ROOT, 'temporal-dev.sh'), 'path'], { encoding: 'utf8' }).trim();
  stateDir = scratchDir('runnerflow-test-temporal-');
  const started = await startDevServer(cli, stateDir);
  server = started.child;
  const address = started.address;
  // Search attributes are registered by start-dev, but only become usable once the
  // namespace cache has them; wait for the list to show them.
  for (let i = 0; i < 50; i++) {
    const out = execFileSync(cli, ['operator', 'search-attribute', 'list', '--address', address], { encoding: 'utf8' });
    if (out.includes('RunnerLeaked')) break;
    await new Promise((r) => setTimeout(r, 200));
  }

  const { bundleWorkflows } = await import('../../worker/workflow-bundle');
  const { writeFileSync } = await import('node:fs');
  const bundlePath = join(stateDir, 'workflow-bundle.js');
  writeFileSync(bundlePath, await bundleWorkflows({ logger: quietLogger() }));

  process.env.TEMPORAL_ADDRESS = address;
  project.provide('temporalAddress', address);
  project.provide('temporalCli', cli);
  project.provide('workflowBundlePath', bundlePath);
}

export async function teardown(): Promise<void> {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  if (runTmpDir) rmSync(runTmpDir, { recursive: true, force: true });
}

function quietLogger() {
  const noop = () => undefined;
  return { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: (m: string) => console.error(m) };
}
