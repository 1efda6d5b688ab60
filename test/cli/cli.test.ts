/**
 * The CLI as operators run it: bin/runnerflow.js spawned as a process against
 * the HTTP API served over node:http, with a worker running the workflows.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { startHttpServer, type HttpServer } from '../../api/node-server';
import { instanceStartOptions } from '../../workflows/instance-options';
import { runnerWorkflowId, type InstanceState } from '../../workflows/messages';
import { connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { ADMIN_TOKEN, INSTANCE_TOKEN_KEY, WEBHOOK_SECRET, recordingLogger, testConfig } from '../api/support';

const BIN = resolve(import.meta.dirname, '../../bin/runnerflow.js');

let connection: Connection;
let client: Client;
let worker: TestWorker;
let server: HttpServer;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  worker = await startTestWorker();
  const app = createApp({
    client,
    taskQueue: worker.taskQueue,
    config: testConfig(worker.taskQueue),
    github: { get: () => worker.github },
    secrets: { adminToken: ADMIN_TOKEN, webhookSecret: WEBHOOK_SECRET, instanceTokenKey: INSTANCE_TOKEN_KEY },
    logger: recordingLogger(),
  });
  server = await startHttpServer(app, '127.0.0.1:0');
});

afterAll(async () => {
  await server?.close();
  await worker?.stop();
  await connection?.close();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH: process.env.PATH ?? '', RUNNERFLOW_URL: server.url, RUNNERFLOW_ADMIN_TOKEN: ADMIN_TOKEN, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function poolFile(name: string, extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-cli-'));
  const path = join(dir, 'pool.yaml');
  writeFileSync(
    path,
    [`name: ${name}`, 'provider: fake', 'github:', '  scope: { kind: repo, owner: acme, repo: widgets }', 'labels: [linux, x64]', 'maxRunners: 2', extra].join('\n'),
  );
  return path;
}

async function runningRunner(pool: string): Promise<string> {
  const name = uniqueName('cli-runner');
  await client.workflow.start('runnerInstance', { taskQueue: worker.taskQueue, ...instanceStartOptions(instanceInput(name, { pool })) });
  await eventually(async () => (await client.workflow.getHandle(runnerWorkflowId(name)).query<InstanceState>('state')).status === 'running', 20_000, 'running');
  return name;
}

describe('runnerflow CLI', () => {
  it('prints help and exits 0', async () => {
    const run = await cli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('runnerflow runner delete NAME [--force] [--bypass-busy]');
    const sub = await cli(['pool', 'create', '--help']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain('--file');
  });

  it('creates pools from a file with flags on top, lists them, refuses duplicates and deletes', async () => {
    const name = uniqueName('cli-pool').toLowerCase();
    const created = await cli(['pool', 'create', '--file', poolFile(name), '--max-runners', '4', '--priority', '2']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout.trim()).toBe(`pool ${name} created`);

    const listed = await eventually(async () => {
      const run = await cli(['pool', 'list', '--json']);
      const pools = JSON.parse(run.stdout) as { name: string; maxRunners: number; priority: number }[];
      return pools.find((p) => p.name === name);
    }, 30_000, 'pool listed');
    expect(listed).toMatchObject({ maxRunners: 4, priority: 2 });

    const table = await cli(['pool', 'list']);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+PROVIDER\s+LABELS\s+PRIORITY\s+MAX\s+ENABLED$/);
    const row = lines.find((l) => l.startsWith(name));
    expect(row).toMatch(new RegExp(`^${name}\\s+fake\\s+linux,x64\\s+2\\s+4\\s+true$`));
    // Columns are aligned: every header starts where its values start.
    expect(row!.indexOf('fake')).toBe(lines[0]!.indexOf('PROVIDER'));

    const duplicate = await cli(['pool', 'create', '--file', poolFile(name)]);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toBe(`error: pool ${name} already exists\n`);

    const deleted = await cli(['pool', 'delete', name]);
    expect(deleted).toMatchObject({ code: 0, stdout: `pool ${name} is being deleted\n` });
  });

  it("reports the API's validation message on one line", async () => {
    const run = await cli(['pool', 'create', '--name', 'Bad_Name', '--provider', 'fake', '--labels', 'linux', '--repo', 'acme/widgets']);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^error: invalid pool: name: lowercase letters/);
  });

  it('lists, shows and force-deletes runners', async () => {
    const pool = uniqueName('cli-pool');
    const name = await runningRunner(pool);
    const listed = await eventually(async () => {
      const run = await cli(['runner', 'list', '--pool', pool, '--status', 'running', '--json']);
      const runners = JSON.parse(run.stdout) as { name: string }[];
      return runners.length === 1 ? runners : undefined;
    }, 30_000, 'runner listed');
    expect(listed[0]).toMatchObject({ name, pool, status: 'running' });

    const table = await cli(['runner', 'list', '--pool', pool]);
    expect(table.stdout).toMatch(new RegExp(`^NAME\\s+POOL\\s+STATUS\\s+PROVIDER\\s+LEAKED\\s+STARTED\\n${name}\\s+${pool}\\s+running\\s+fake\\s+\\S+`));

    const shown = await cli(['runner', 'show', name]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^Status:\s+running$/m);
    expect(shown.stdout).toMatch(/^AT\s+FROM\s+TO\s+REASON$/m);
    const json = await cli(['runner', 'show', name, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ name, status: 'running' });

    worker.github.busy.add(name);
    const busy = await cli(['runner', 'delete', name, '--force']);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/^error: runner .* is running a job on GitHub: cancel the job/);
    worker.github.busy.delete(name);

    const forced = await cli(['runner', 'delete', name, '--force']);
    expect(forced).toMatchObject({ code: 0, stdout: `runner ${name} is being force-deleted\n` });
    await eventually(async () => (await client.workflow.getHandle(runnerWorkflowId(name)).describe()).status.name !== 'RUNNING', 20_000, 'gone');
  });

  it('fails with one line and a non-zero code on API and usage errors', async () => {
    const unknown = await cli(['runner', 'show', uniqueName('nobody')]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: runner .* does not exist\n$/);

    const badStatus = await cli(['runner', 'list', '--status', 'sleeping']);
    expect(badStatus.code).toBe(1);
    expect(badStatus.stderr).toContain('unknown status "sleeping"');

    const wrongToken = await cli(['pool', 'list', '--token', 'wrong']);
    expect(wrongToken).toMatchObject({ code: 1, stderr: 'error: the bearer token is not the admin token\n' });

    const noToken = await cli(['pool', 'list'], { RUNNERFLOW_ADMIN_TOKEN: '' });
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/^error: missing bearer token/);

    const unreachable = await cli(['pool', 'list', '--url', 'http://127.0.0.1:9']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: cannot reach the runnerflow API at http:\/\/127\.0\.0\.1:9/);

    const usage = await cli(['runner', 'delete']);
    expect(usage.code).toBe(2);
    const unknownOption = await cli(['runner', 'list', '--colour']);
    expect(unknownOption).toMatchObject({ code: 2, stderr: "error: Unknown option '--colour' (see --help)\n" });
    const bypass = await cli(['runner', 'delete', 'x', '--bypass-busy']);
    expect(bypass.code).toBe(2);
  });
});
