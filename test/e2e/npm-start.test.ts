/**
 * `npm start` as a user runs it: its own dev server (started through
 * temporal-dev.sh on free ports), the demo, Ctrl-C to the whole process group.
 * The dev server must survive Ctrl-C, the process must end within its bound
 * even when Temporal is gone, and a killed demo's pool and runners must not
 * outlive the next demo's start.
 */
import { Client, Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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
