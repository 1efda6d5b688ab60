/**
 * The CLI as operators run it: bin/runnerflow.js spawned as a process against
 * the HTTP API served over node:http, with a worker running the workflows.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ScheduleOverlapPolicy, type Client, type Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLivenessActivities } from '../../activities/liveness-activities';
import { createSweepActivities } from '../../activities/sweep-activities';
import { createApp } from '../../api/app';
import { FakeProvider } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { startHttpServer, type HttpServer } from '../../api/node-server';
import { instanceStartOptions } from '../../workflows/instance-options';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import { sweepScheduleId } from '../../worker/sweep-schedule';
import { LIVENESS_CHECK_WORKFLOW } from '../../workflows/liveness-check';
import { PROVIDER_SWEEP_WORKFLOW } from '../../workflows/provider-sweep';
import { runnerWorkflowId, type InstanceState } from '../../workflows/messages';
import { jobsQueuedSignal, poolWorkflowId, UNMATCHED_JOBS_WORKFLOW, unmatchedJobSignal, unmatchedJobsWorkflowId } from '../../workflows/pool-messages';
import { GitHubDouble } from '../support/github-double';
import { awayFromTheHour, connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { ADMIN_TOKEN, INSTANCE_TOKEN_KEY, WEBHOOK_SECRET, recordingLogger, testConfig } from '../api/support';

const BIN = resolve(import.meta.dirname, '../../bin/runnerflow.js');
// A provider name of this file's own: a liveness pass looks at every running runner of its provider in
// the namespace, and other test files run theirs beside this one.
const PROVIDER = uniqueName('cli-provider');

let connection: Connection;
let client: Client;
let worker: TestWorker;
let server: HttpServer;

beforeAll(async () => {
  ({ connection, client } = await connectClient());
  // The worker sweeps and checks liveness too, so `sweep run` and `liveness list` have runs to show.
  const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-cli-fake-'));
  const providers = new Map<string, ProviderPort>([[PROVIDER, new FakeProvider({ name: PROVIDER, stateDir: fakeDir })]]);
  const extraActivities = {
    ...createSweepActivities({ controllerId: 'test-controller', providers, client, namespace: 'default' }),
    ...createLivenessActivities({ controllerId: 'test-controller', providers, github: { get: () => new GitHubDouble() }, client, namespace: 'default' }),
  };
  worker = await startTestWorker({ providers, fakeDir, extraActivities });
  const app = createApp({
    client,
    taskQueue: worker.taskQueue,
    config: testConfig(worker.taskQueue, PROVIDER),
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
      { env: cliEnv(env), timeout: 30_000 },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const cliEnv = (env: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? '', RUNNERFLOW_URL: server.url, RUNNERFLOW_ADMIN_TOKEN: ADMIN_TOKEN, ...env });

/** A long-running CLI command whose output can be read while it runs. */
function cliProcess(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: cliEnv() });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, output, exited };
}

function poolFile(name: string, extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-cli-'));
  const path = join(dir, 'pool.yaml');
  writeFileSync(
    path,
    [`name: ${name}`, `provider: ${PROVIDER}`, 'github:', '  scope: { kind: repo, owner: acme, repo: widgets }', 'labels: [linux, x64]', 'maxRunners: 2', extra].join('\n'),
  );
  return path;
}

async function runningRunner(pool: string): Promise<string> {
  const name = uniqueName('cli-runner');
  await client.workflow.start('runnerInstance', { taskQueue: worker.taskQueue, ...instanceStartOptions(instanceInput(name, { pool, provider: PROVIDER })) });
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

    // The counts come from the pool's glance, written once it has decided: idle, busy, starting, queued.
    const { lines, row } = await eventually(async () => {
      const table = await cli(['pool', 'list']);
      const all = table.stdout.trim().split('\n');
      const found = all.find((l) => l.startsWith(name));
      return found && /\d+$/.test(found) ? { lines: all, row: found } : undefined;
    }, 30_000, 'the pool listed with its counts');
    expect(lines[0]).toMatch(/^NAME\s+PROVIDER\s+LABELS\s+PRIORITY\s+MAX\s+ENABLED\s+IDLE\s+BUSY\s+STARTING\s+QUEUED$/);
    expect(row).toMatch(new RegExp(`^${name}\\s+${PROVIDER}\\s+linux,x64\\s+2\\s+4\\s+true\\s+\\d+\\s+0\\s+\\d+\\s+0$`));
    // Columns are aligned: every header starts where its values start.
    expect(row!.indexOf(PROVIDER)).toBe(lines[0]!.indexOf('PROVIDER'));

    const duplicate = await cli(['pool', 'create', '--file', poolFile(name)]);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toBe(`error: pool ${name} already exists\n`);

    const deleted = await cli(['pool', 'delete', name]);
    expect(deleted).toMatchObject({ code: 0, stdout: `pool ${name} is being deleted\n` });
  });

  it("reports the API's validation message on one line", async () => {
    const run = await cli(['pool', 'create', '--name', 'Bad_Name', '--provider', PROVIDER, '--labels', 'linux', '--repo', 'acme/widgets']);
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
    expect(table.stdout).toMatch(new RegExp(`^NAME\\s+POOL\\s+STATUS\\s+PROVIDER\\s+LEAKED\\s+STARTED\\n${name}\\s+${pool}\\s+running\\s+${PROVIDER}\\s+\\S+`));

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
    expect(noToken.stderr).toBe('error: the API needs the admin token: pass --token TOKEN or set RUNNERFLOW_ADMIN_TOKEN\n');

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

  it('shows a pool with its runners counted by phase', async () => {
    const name = uniqueName('cli-show').toLowerCase();
    expect((await cli(['pool', 'create', '--file', poolFile(name), '--min-idle', '1'])).code).toBe(0);
    const shown = await eventually(async () => {
      const run = await cli(['pool', 'show', name]);
      return /^Alive:\s+1 \(/m.test(run.stdout) ? run : undefined;
    }, 30_000, 'one runner alive');
    expect(shown.stdout).toMatch(/^Queued jobs:\s+0$/m);
    expect(shown.stdout).toMatch(/^Alive:\s+1 \(idle \d, busy 0, starting \d\); leaving 0$/m);
    expect(shown.stdout).toMatch(new RegExp(`^RUNNER\\s+STATUS\\s+RUNNER STATUS\\s+PHASE\\s+JOB\\s+SINCE\\n${name}-\\S+\\s+\\S+\\s+\\S+\\s+(starting|idle)\\s+-\\s+\\S+$`, 'm'));
    const json = JSON.parse((await cli(['pool', 'show', name, '--json'])).stdout) as { counts: { alive: number } };
    expect(json.counts.alive).toBe(1);
    expect((await cli(['pool', 'delete', name])).code).toBe(0);
  });

  it('counts every queued job of a pool and lists the oldest', async () => {
    const name = uniqueName('cli-queue').toLowerCase();
    expect((await cli(['pool', 'create', '--file', poolFile(name), '--max-runners', '0'])).code).toBe(0);
    const jobs = Array.from({ length: 250 }, (_, i) => ({ jobId: 900_000 + i, labels: ['linux', 'x64'], repository: 'acme/widgets' }));
    await client.workflow.getHandle(poolWorkflowId(name)).signal(jobsQueuedSignal, { jobs });
    const shown = await eventually(async () => {
      const run = await cli(['pool', 'show', name]);
      return /^Queued jobs:\s+250$/m.test(run.stdout) ? run : undefined;
    }, 20_000, '250 queued jobs counted');
    expect(shown.stdout).toMatch(/^900000\s+linux,x64\s+acme\/widgets$/m);
    expect(shown.stdout).toMatch(/^\(the oldest 200 of 250 queued jobs\)$/m);
    const json = JSON.parse((await cli(['pool', 'show', name, '--json'])).stdout) as { queuedJobs: unknown[]; queuedJobCount: number };
    expect([json.queuedJobs.length, json.queuedJobCount]).toEqual([200, 250]);
    expect((await cli(['pool', 'delete', name])).code).toBe(0);
  });

  it('watches a runner live until it is deleted', async () => {
    const pool = uniqueName('cli-watch');
    const name = await runningRunner(pool);
    const watch = cliProcess(['runner', 'watch', name, '--interval', '0.2']);
    await eventually(() => watch.output.stdout.includes('creating -> running'), 20_000, 'transitions so far');
    expect(watch.output.stdout.split('\n')[0]).toBe(`runner ${name} (pool ${pool}, provider ${PROVIDER})`);

    expect((await cli(['runner', 'delete', name, '--force'])).code).toBe(0);
    expect(await watch.exited).toBe(0);
    const lines = watch.output.stdout.trim().split('\n');
    expect(lines.filter((l) => / -> /.test(l)).map((l) => l.split(/\s+/).slice(1, 4).join(' '))).toEqual([
      'pending_create -> creating',
      'creating -> running',
      'running -> pending_force_delete',
      'pending_force_delete -> deleting',
      'deleting -> deleted',
    ]);
    expect(lines.at(-1)).toBe(`runner ${name} is deleted (forced)`);
    expect(watch.output.stderr).toBe('');
  });

  it('stops watching on Ctrl-C with exit code 130, and fails at once for an unknown runner', async () => {
    const name = await runningRunner(uniqueName('cli-watch'));
    const watch = cliProcess(['runner', 'watch', name, '--json']);
    await eventually(() => watch.output.stdout.includes('"to":"running"'), 20_000, 'first lines');
    const first = JSON.parse(watch.output.stdout.split('\n')[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({ runner: name, from: 'pending_create', to: 'creating', at: expect.any(String) });
    watch.child.kill('SIGINT');
    expect(await watch.exited).toBe(130);
    expect(watch.output.stderr).toBe('error: interrupted\n');
    expect((await client.workflow.getHandle(runnerWorkflowId(name)).describe()).status.name).toBe('RUNNING');
    await cli(['runner', 'delete', name, '--force']);

    const unknown = await cli(['runner', 'watch', uniqueName('nobody')]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: runner .* does not exist\n$/);
    const badInterval = await cli(['runner', 'watch', 'x', '--interval', 'soon']);
    expect(badInterval).toMatchObject({ code: 2, stderr: 'error: --interval "soon" is not a number of seconds between 0.1 and 3600 (see --help)\n' });
  });

  it('lists unmatched jobs', async () => {
    const jobId = Math.floor(Math.random() * 1e9);
    await client.workflow.signalWithStart(UNMATCHED_JOBS_WORKFLOW, {
      workflowId: unmatchedJobsWorkflowId(worker.taskQueue),
      taskQueue: worker.taskQueue,
      args: [],
      signal: unmatchedJobSignal,
      signalArgs: [{ jobId, labels: ['self-hosted', 'gpu'], repository: 'acme/models', reason: 'no pool has the labels self-hosted, gpu', recordedAt: new Date().toISOString() }],
    });
    const table = await eventually(async () => {
      const run = await cli(['jobs', 'unmatched']);
      return run.stdout.includes(String(jobId)) ? run : undefined;
    }, 20_000, 'the job listed');
    expect(table.stdout).toMatch(/^JOB\s+REPOSITORY\s+LABELS\s+REASON\s+RECORDED$/m);
    expect(table.stdout).toMatch(new RegExp(`^${jobId}\\s+acme/models\\s+self-hosted,gpu\\s+no pool has the labels self-hosted, gpu\\s+\\S+$`, 'm'));
    const json = JSON.parse((await cli(['jobs', 'unmatched', '--json'])).stdout) as { jobId: number }[];
    expect(json.map((j) => j.jobId)).toContain(jobId);
  });

  it('lists the sweeps and sweeps a provider now, saying why when it cannot', async () => {
    // The API's config has one provider, this file's own, so no other test makes its schedule.
    const before = await cli(['sweep', 'list']);
    expect(before.stdout).toMatch(/^PROVIDER\s+SCHEDULE\s+NEXT RUN\s+LAST RUN\s+STATUS\s+RESULT$/m);
    expect(before.stdout).toMatch(new RegExp(`^${PROVIDER}\\s+no schedule \\(no worker has started with this provider\\)`, 'm'));
    const early = await cli(['sweep', 'run', PROVIDER]);
    expect(early.code).toBe(1);
    expect(early.stderr).toBe(`error: there is no sweep schedule sweep/${PROVIDER} yet: a worker creates it when it starts with provider "${PROVIDER}"\n`);
    const unknown = await cli(['sweep', 'run', 'gpu-cloud']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`error: provider "gpu-cloud" is not configured (configured: ${PROVIDER})\n`);
    expect((await cli(['sweep', 'run'])).code).toBe(2);

    await awayFromTheHour();
    const schedule = await client.schedule.create({
      scheduleId: sweepScheduleId(PROVIDER),
      spec: { intervals: [{ every: '24h' }] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      action: { type: 'startWorkflow', workflowType: PROVIDER_SWEEP_WORKFLOW, workflowId: sweepScheduleId(PROVIDER), taskQueue: worker.taskQueue, args: [{ provider: PROVIDER, gracePeriodMs: 3_600_000 }] },
    });
    try {
      const now = await cli(['sweep', 'run', PROVIDER]);
      expect(now.stdout).toBe(`sweep/${PROVIDER} triggered; \`runnerflow sweep list\` shows its result\n`);
      const listed = await eventually(async () => {
        const run = await cli(['sweep', 'list']);
        return new RegExp(`^${PROVIDER}\\s.*\\scompleted\\s+deleted 0 of \\d+ listed, 0 failed$`, 'm').test(run.stdout) ? run : undefined;
      }, 20_000, 'the sweep run listed as completed');
      expect(listed.stdout).toMatch(new RegExp(`^${PROVIDER}\\s+every 24h\\s+\\S+\\s+\\S+\\s+completed`, 'm'));
      const json = JSON.parse((await cli(['sweep', 'list', '--json'])).stdout) as { provider: string; runs: { status: string }[] }[];
      expect(json.find((s) => s.provider === PROVIDER)?.runs).toEqual([expect.objectContaining({ status: 'completed' })]);

      await schedule.pause('sweep disabled in the config');
      expect(JSON.parse((await cli(['sweep', 'run', PROVIDER, '--json'])).stdout)).toEqual({ provider: PROVIDER, scheduleId: `sweep/${PROVIDER}`, paused: true });
    } finally {
      await schedule.delete();
    }
  });

  it("lists each provider's liveness checks and what their last pass found", async () => {
    // The API's config has one provider, this file's own, so no other test makes its liveness schedules.
    const before = await cli(['liveness', 'list']);
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(/^PROVIDER\s+CHECK\s+SCHEDULE\s+NEXT RUN\s+LAST RUN\s+STATUS\s+RESULT$/m);
    expect(before.stdout).toMatch(new RegExp(`^${PROVIDER}\\s+machines\\s+no schedule \\(no worker has started with this provider\\)`, 'm'));
    expect(before.stdout).toMatch(new RegExp(`^${PROVIDER}\\s+github\\s+no schedule \\(no worker has started with this provider\\)`, 'm'));
    expect((await cli(['liveness', 'list', 'extra'])).code).toBe(2);

    const scheduleId = livenessScheduleId(PROVIDER, 'machines');
    await awayFromTheHour();
    const schedule = await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '24h' }] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      action: { type: 'startWorkflow', workflowType: LIVENESS_CHECK_WORKFLOW, workflowId: scheduleId, taskQueue: worker.taskQueue, args: [{ provider: PROVIDER, check: 'machines' }] },
    });
    try {
      await schedule.trigger();
      const listed = await eventually(async () => {
        const run = await cli(['liveness', 'list']);
        // Every running runner of this file's provider has its machine: none found.
        return new RegExp(`^${PROVIDER}\\s+machines\\s.*\\scompleted\\s+\\d+ runners? looked at, 0 found$`, 'm').test(run.stdout) ? run : undefined;
      }, 60_000, 'the liveness pass listed as completed');
      expect(listed.stdout).toMatch(new RegExp(`^${PROVIDER}\\s+machines\\s+every 24h\\s+\\S+\\s+\\S+\\s+completed`, 'm'));
      const json = JSON.parse((await cli(['liveness', 'list', '--json'])).stdout) as { provider: string; check: string; runs: { status: string; result?: { counts: unknown } }[] }[];
      expect(json.map((l) => `${l.provider} ${l.check}`)).toEqual([`${PROVIDER} machines`, `${PROVIDER} github`]);
      expect(json[0]?.runs).toEqual([expect.objectContaining({ status: 'completed', result: expect.objectContaining({ counts: { findings: 0, orphaned: 0, uncounted: 0, poolsReset: 0, stuckRunnersEnded: 0, poolsAskedToLook: 0 } }) })]);
    } finally {
      await schedule.delete();
    }
  });

  it("lists each credentials' webhook redelivery, saying when no worker has made its schedule", async () => {
    // The API's config has token credentials `default` and no public URL: no worker makes their schedule.
    const listed = await cli(['redelivery', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^CREDENTIALS\s+SCHEDULE\s+NEXT RUN\s+LAST RUN\s+STATUS\s+RESULT$/m);
    expect(listed.stdout).toMatch(/^default\s+no schedule \(no worker has started with these credentials\)/m);
    const json = JSON.parse((await cli(['redelivery', 'list', '--json'])).stdout) as unknown;
    expect(json).toEqual([{ credentials: 'default', scheduleId: 'redelivery/default', scheduled: false, runs: [] }]);
    expect((await cli(['redelivery', 'list', 'extra'])).code).toBe(2);
  });

  it('completes commands and options in bash, and documents its exit codes', async () => {
    const script = await cli(['completion', 'bash']);
    expect(script.code).toBe(0);
    const complete = (words: string[]) =>
      new Promise<string>((done, fail) =>
        execFile(
          'bash',
          ['-c', `source /dev/stdin <<'EOF'\n${script.stdout}\nEOF\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _runnerflow; echo "\${COMPREPLY[*]}"`],
          (err, stdout) => (err ? fail(err) : done(stdout.trim())),
        ),
      );
    expect(await complete(['runnerflow', ''])).toBe('status pool runner jobs sweep liveness redelivery completion');
    // A group that is a command of its own completes its options.
    expect(await complete(['runnerflow', 'status', '--j'])).toBe('--json');
    expect(await complete(['runnerflow', 'redelivery', ''])).toBe('list');
    expect(await complete(['runnerflow', 'runner', 'w'])).toBe('watch');
    expect(await complete(['runnerflow', '--url', 'http://x', 'runner', 'delete', 'r1', '--b'])).toBe('--bypass-busy');
    expect(await complete(['runnerflow', 'jobs', ''])).toBe('show route unmatched');

    const help = await cli(['--help']);
    expect(help.stdout).toContain('runnerflow runner watch NAME [--interval SECONDS]');
    expect(help.stdout).toMatch(/^Exit codes:\n  0 .*\n  1 .*\n  2 .*\n  3 .*\n  130 interrupted with Ctrl-C$/m);
    expect((await cli(['runner', 'watch', '--help'])).stdout).toContain('Exit codes:');
  });
});
