/**
 * `npm start` as a user runs it: its own dev server (started through
 * temporal-dev.sh on free ports), the demo, Ctrl-C to the whole process group.
 * The dev server must survive Ctrl-C, the process must end within its bound
 * even when Temporal is gone, and a killed demo's pool and runners must not
 * outlive the next demo's start.
 */
import { Client, Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { devServer, temporalAnswers } from '../../devstack/temporal-server';
import { freePort } from '../../devstack/free-port';
import { eventually, uniqueName } from '../support/temporal';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** What main.ts allows its clean-up (RUNNERFLOW_SHUTDOWN_TIMEOUT), plus process start-up slack. */
const SHUTDOWN_BOUND_MS = 6_000;
const EXIT_BOUND_MS = SHUTDOWN_BOUND_MS + 3_000;

let stateDir: string;
let workDir: string;
let port: number;
let env: NodeJS.ProcessEnv;
let connection: Connection | undefined;
let client: Client;
const taskQueue = uniqueName('tq-demo');
/** Where the demo is told the Temporal Web UI is (TEMPORAL_UI_URL): its banner and summary must say so. */
const WEB_UI_URL = 'http://temporal-ui.example:8088';

interface Demo {
  child: ChildProcess;
  pool: string;
  output(): string;
  exited: Promise<number | null>;
}

async function startDemo(): Promise<Demo> {
  let output = '';
  const child = spawn(process.execPath, ['--import', TSX, join(ROOT, 'main.ts')], {
    cwd: workDir,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let pool: string;
  try {
    pool = await eventually(() => /pool "(demo-[a-z0-9]+)" created/.exec(output)?.[1], 90_000, 'the demo pool');
  } catch (err) {
    // A demo that never got going must not outlive the test, and what it printed says why.
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    throw new Error(`${(err as Error).message}; the demo printed:\n${output}`);
  }
  return { child, pool, output: () => output, exited };
}

async function connect(): Promise<void> {
  connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  client = new Client({ connection, namespace: 'default' });
}

async function openRunners(pool: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowType = 'runnerInstance' AND ExecutionStatus = 'Running' AND RunnerPool = '${pool}'` })) ids.push(w.workflowId);
  return ids;
}

async function poolStatus(pool: string): Promise<string> {
  return (await client.workflow.getHandle(`pool/${pool}`).describe()).status.name;
}

/** The demo's pool has made at least one runner, which is running. */
async function demoRunning(demo: Demo): Promise<void> {
  await eventually(async () => (await openRunners(demo.pool)).length > 0, 60_000, `a runner of ${demo.pool}:\n${demo.output()}`);
}

async function interrupt(demo: Demo): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  process.kill(-demo.child.pid!, 'SIGINT');
  const code = await Promise.race([demo.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000))]);
  if (code === 'hung') {
    process.kill(-demo.child.pid!, 'SIGKILL');
    throw new Error(`npm start did not exit after SIGINT:\n${demo.output()}`);
  }
  return { code, ms: Date.now() - started };
}

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-demo-temporal-'));
  workDir = mkdtempSync(join(tmpdir(), 'runnerflow-demo-cwd-'));
  port = await freePort();
  env = {
    ...process.env,
    // The suite's CLI, so temporal-dev.sh does not install one into the throwaway state dir.
    PATH: `${dirname(inject('temporalCli'))}:${process.env.PATH ?? ''}`,
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    TEMPORAL_PORT: String(port),
    TEMPORAL_UI_PORT: 'off',
    TEMPORAL_HTTP_PORT: String(await freePort()),
    TEMPORAL_METRICS_PORT: String(await freePort()),
    TEMPORAL_STATE_DIR: stateDir,
    RUNNERFLOW_TASK_QUEUE: taskQueue,
    RUNNERFLOW_LISTEN: '127.0.0.1:0',
    RUNNERFLOW_DEMO_JOBS: '1',
    RUNNERFLOW_SHUTDOWN_TIMEOUT: String(SHUTDOWN_BOUND_MS),
    RUNNERFLOW_LOG_LEVEL: 'error',
    TEMPORAL_UI_URL: WEB_UI_URL,
  };
});

afterAll(async () => {
  await connection?.close();
  devServer('stop', String(port), 'quiet', env);
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
});

it('Ctrl-C leaves the dev server running, ends within its bound and removes the demo; a killed demo is cleared by the next one', async () => {
  const killed = await startDemo();
  await connect();
  await demoRunning(killed);
  process.kill(-killed.child.pid!, 'SIGKILL');
  await killed.exited;
  expect(await poolStatus(killed.pool)).toBe('RUNNING');

  const demo = await startDemo();
  expect(demo.output()).toContain(`removing demo pool "${killed.pool}"`);
  expect(await poolStatus(killed.pool)).not.toBe('RUNNING');
  expect(await openRunners(killed.pool)).toEqual([]);
  await demoRunning(demo);
  // The configured Web UI, not the dev server's default, in the banner and in what the dashboard reads.
  const [, apiUrl, token] = await eventually(() => /HTTP API: (\S+) \(admin token: (\S+)\)/.exec(demo.output()) ?? undefined, 10_000, 'the banner');
  expect(demo.output()).toContain(`Temporal Web UI: ${WEB_UI_URL} `);
  // The demo's GitHub is its own simulator: nothing to share a controllerId with.
  expect(demo.output()).not.toContain('controllerId is the default');
  const summary = (await (await fetch(`${apiUrl}/api/v1/summary`, { headers: { authorization: `Bearer ${token}` } })).json()) as { temporal: { webUiUrl: string } };
  expect(summary.temporal.webUiUrl).toBe(WEB_UI_URL);

  const { code, ms } = await interrupt(demo);
  expect(code, demo.output()).toBe(0);
  expect(ms).toBeLessThan(EXIT_BOUND_MS);
  expect(await temporalAnswers(`127.0.0.1:${port}`)).toBe(true);
  expect(await poolStatus(demo.pool)).not.toBe('RUNNING');
  expect(await openRunners(demo.pool)).toEqual([]);
}, 240_000);

it('Ctrl-C with Temporal gone still ends within the bound, and the next demo removes what was left', async () => {
  const stranded = await startDemo();
  await demoRunning(stranded);
  devServer('stop', String(port), 'quiet', env);
  expect(await temporalAnswers(`127.0.0.1:${port}`, 500)).toBe(false);

  const { ms } = await interrupt(stranded);
  expect(ms).toBeLessThan(EXIT_BOUND_MS);
  expect(stranded.output()).toContain(`demo pool "${stranded.pool}" not removed`);

  // Same SQLite file: the stranded pool is still there, and the next demo clears it.
  const next = await startDemo();
  expect(next.output()).toContain(`removing demo pool "${stranded.pool}"`);
  expect(await poolStatus(stranded.pool)).not.toBe('RUNNING');
  expect(await openRunners(stranded.pool)).toEqual([]);
  const { code } = await interrupt(next);
  expect(code, next.output()).toBe(0);
}, 240_000);

it('a bad RUNNERFLOW_SHUTDOWN_TIMEOUT stops the start with an error naming it, before anything is started', async () => {
  const child = spawn(process.execPath, ['--import', TSX, join(ROOT, 'main.ts')], {
    cwd: workDir,
    env: { ...env, RUNNERFLOW_SHUTDOWN_TIMEOUT: 'soonish' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  expect(code).toBe(1);
  expect(output).toMatch(/^runnerflow: RUNNERFLOW_SHUTDOWN_TIMEOUT: .*soonish/m);
  // A configuration error, not a crash: no stack trace, and no server or worker started.
  expect(output).not.toMatch(/^\s+at /m);
  expect(output).not.toMatch(/HTTP API:|starting the local dev server/);
});

/** Runs main.ts to its end (or SIGKILLs it at `timeoutMs`); what it printed, stdout and stderr together. */
async function startUntilExit(overrides: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', TSX, join(ROOT, 'main.ts')], { cwd: workDir, env: { ...env, ...overrides }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timer);
  return { code, output };
}

/** A setup mistake, not a crash: one line naming it, exit code 1, no stack trace nor object dump. */
function expectOneLineFailure(run: { code: number | null; output: string }, line: RegExp): void {
  expect(run.code, run.output).toBe(1);
  expect(run.output).toMatch(line);
  expect(run.output).not.toMatch(/^\s+at /m);
  expect(run.output).not.toMatch(/^\s*(Error|\w+Error)\b.*\n\s*\{|^\s*code: /m);
}

it('an API address that is no host:port, or one already in use, stops the start with one line', async () => {
  for (const listen of ['127.0.0.1:99999', 'not-an-address']) {
    const run = await startUntilExit({ RUNNERFLOW_LISTEN: listen });
    expectOneLineFailure(run, new RegExp(`^runnerflow: RUNNERFLOW_LISTEN: listen address "${listen}" is not host:port`, 'm'));
    expect(run.output).not.toMatch(/starting the local dev server/);
  }
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const { port: busy } = taken.address() as { port: number };
  try {
    // The suite's server: this start needs Temporal only to get as far as the API.
    const run = await startUntilExit({ TEMPORAL_ADDRESS: inject('temporalAddress'), RUNNERFLOW_LISTEN: `127.0.0.1:${busy}`, RUNNERFLOW_TASK_QUEUE: uniqueName('tq-busy-port') });
    expectOneLineFailure(run, new RegExp(`^runnerflow: cannot listen on 127\\.0\\.0\\.1:${busy}: the address is already in use .*\\(EADDRINUSE\\)$`, 'm'));
  } finally {
    taken.close();
  }
}, 120_000);

it('a dev server that fails to start stops the start with one line after what the script printed', async () => {
  const brokenState = mkdtempSync(join(tmpdir(), 'runnerflow-broken-temporal-'));
  // A directory where the database file should be: the server cannot open it and exits.
  mkdirSync(join(brokenState, 'db'));
  const brokenPort = await freePort();
  try {
    const run = await startUntilExit({
      TEMPORAL_ADDRESS: `127.0.0.1:${brokenPort}`,
      TEMPORAL_PORT: String(brokenPort),
      TEMPORAL_STATE_DIR: brokenState,
      TEMPORAL_DB: join(brokenState, 'db'),
      TEMPORAL_HTTP_PORT: String(await freePort()),
      TEMPORAL_METRICS_PORT: String(await freePort()),
    });
    expect(run.output).toMatch(/^temporal-dev: server exited during start/m);
    expectOneLineFailure(run, /^runnerflow: the local Temporal dev server did not start: \.\/temporal-dev\.sh start \(port \d+\) exited with code 1; its output above says why/m);
  } finally {
    devServer('stop', String(brokenPort), 'quiet', { ...env, TEMPORAL_STATE_DIR: brokenState });
    rmSync(brokenState, { recursive: true, force: true });
  }
}, 120_000);

it('a configured start without an admin token says so in its banner instead of pointing at a token, and names the configured Web UI', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-configured-'));
  const config = join(dir, 'runnerflow.yaml');
  // A provider of its own name and no schedules: the suite's server is shared with other tests.
  writeFileSync(
    config,
    [
      'github: { credentials: [{ auth: { type: pat, token: { env: RUNNERFLOW_TEST_PAT } } }] }',
      `providers: [{ type: local-process, name: ${uniqueName('local').toLowerCase()} }]`,
      'temporal: { webUiUrl: "https://temporal.example.com/namespaces/default" }',
      'sweep: { enabled: false }',
      'liveness: { enabled: false }',
    ].join('\n'),
  );
  const { RUNNERFLOW_ADMIN_TOKEN: _none, TEMPORAL_UI_URL: _configured, ...rest } = env;
  const child = spawn(process.execPath, ['--import', TSX, join(ROOT, 'main.ts')], {
    cwd: workDir,
    env: { ...rest, RUNNERFLOW_CONFIG: config, RUNNERFLOW_TEST_PAT: 'ghp_unused', TEMPORAL_ADDRESS: inject('temporalAddress'), RUNNERFLOW_TASK_QUEUE: uniqueName('tq-configured') },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  try {
    await eventually(() => output.includes('Temporal Web UI:'), 90_000, `the banner:\n${output}`);
    expect(output).toMatch(/^runnerflow: HTTP API: http:\S+ \(no admin token configured: \/api\/v1 refuses every caller until RUNNERFLOW_ADMIN_TOKEN or api\.adminToken is set\)$/m);
    expect(output).not.toMatch(/admin token: \(/);
    expect(output).toContain('Temporal Web UI: https://temporal.example.com/namespaces/default ');
    // Real GitHub credentials and no controllerId of its own: said before anything else starts.
    expect(output).toMatch(/^runnerflow: warning: controllerId is the default "runnerflow": give each runnerflow installation/m);
  } finally {
    process.kill(-child.pid!, 'SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    // Only a start still running is killed: one that ended (by a signal too) has no group left, and
    // an ESRCH thrown here would hide what the test found.
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}, 150_000);
