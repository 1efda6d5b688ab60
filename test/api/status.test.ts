/**
 * `GET /api/v1/status` and `runnerflow status` on the real server: each check ok when its part
 * works, and each problem named with what to do, from a task queue no worker polls to a pool
 * whose tasks keep failing.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renewalHint, type InstallationStatus, type StatusCheck } from '../../api/installation-status';
import { createApp, type App } from '../../api/app';
import type { ApiSecrets } from '../../api/deps';
import { startPool } from '../../api/pool-settings';
import { signedRequest } from '../github/support/signed-request';
import { parseConfig } from '../../config/load';
import { GitHubApiError, GitHubRateLimitError, type GitHubPort } from '../../github/port';
import { runCli } from '../../cli/run';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import { ensureSchedule } from '../../worker/schedules';
import { MACHINE_CLEANUP_WORKFLOW, cleanupWorkflowId } from '../../workflows/cleanup-messages';
import { LIVENESS_CHECK_WORKFLOW } from '../../workflows/liveness-check';
import { UNMATCHED_JOBS_WORKFLOW, poolWorkflowId, unmatchedJobSignal, unmatchedJobsWorkflowId, type PoolGlance } from '../../workflows/pool-messages';
import { counterfeitPool, poolSettingsFor, stuckPool } from '../liveness/counterfeit';
import { addProvider, useLivenessRig } from '../liveness/helpers';
import { GitHubDouble } from '../support/github-double';
import { eventually, startTestWorker, temporalAddress, uniqueName } from '../support/temporal';
import { ADMIN_TOKEN, INSTANCE_TOKEN_KEY, WEBHOOK_SECRET, recordingLogger, testApp } from './support';

const rig = useLivenessRig();

type Switches = { sweep?: boolean; liveness?: boolean; redelivery?: boolean };

/** The API for a task queue, with a provider and credentials of its own and the schedules switched as given (all off by default). */
function statusApp(taskQueue: string, provider: string, on: Switches = {}, github: GitHubPort = rig.github, secrets: Partial<ApiSecrets> = {}, workflowCacheSize?: number): App {
  const config = parseConfig({
    temporal: { taskQueue, ...(workflowCacheSize ? { workflowCacheSize } : {}) },
    providers: [{ type: 'fake', name: provider, stateDir: '/tmp/runnerflow-status-test-unused' }],
    github: { credentials: [{ name: uniqueName('creds'), auth: { type: 'pat', token: { env: 'RUNNERFLOW_TEST_UNUSED_TOKEN' } } }] },
    sweep: { enabled: on.sweep ?? false },
    liveness: { enabled: on.liveness ?? false },
    redelivery: { enabled: on.redelivery ?? false },
  });
  return createApp({
    client: rig.client,
    taskQueue,
    config,
    github: { get: () => github },
    secrets: { adminToken: ADMIN_TOKEN, webhookSecret: WEBHOOK_SECRET, instanceTokenKey: INSTANCE_TOKEN_KEY, ...secrets },
    logger: recordingLogger(),
  });
}

async function statusOf(app: App): Promise<InstallationStatus> {
  const answer = await app(new Request('http://runnerflow.test/api/v1/status', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
  expect(answer.status).toBe(200);
  return (await answer.json()) as InstallationStatus;
}

const named = (status: InstallationStatus, name: StatusCheck['name']): StatusCheck => status.checks.find((c) => c.name === name)!;

/** `runnerflow status` against the app, in this process. */
async function cli(app: App, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['status', ...args], {
    stdout: (t) => (stdout += `${t}\n`),
    stderr: (t) => (stderr += `${t}\n`),
    env: { RUNNERFLOW_URL: 'http://runnerflow.test', RUNNERFLOW_ADMIN_TOKEN: ADMIN_TOKEN },
    fetch: (input, init) => app(new Request(input, init)),
  });
  return { code, stdout, stderr };
}

describe('the installation status', () => {
  it('is ok when a worker polls, the pools answer and nothing waits, and says so', async () => {
    const provider = addProvider(rig).name;
    const app = statusApp(rig.worker.taskQueue, provider);
    const status = await eventually(async () => {
      const s = await statusOf(app);
      return s.status === 'ok' ? s : undefined;
    }, 20_000, 'an ok status');
    expect(status.checks.map((c) => [c.name, c.status])).toEqual([
      ['temporal', 'ok'],
      ['github', 'ok'],
      ['webhooks', 'ok'],
      ['workers', 'ok'],
      ['pools', 'ok'],
      ['schedules', 'ok'],
      ['unmatched_jobs', 'ok'],
      ['machine_cleanups', 'ok'],
    ]);
    expect(named(status, 'workers').summary).toMatch(new RegExp(`^1 worker on task queue "${rig.worker.taskQueue}" \\(\\d+@.+\\), one build$`));
    expect(named(status, 'schedules').summary).toBe('4 schedules; off in the config: sweep, liveness, redelivery');
    expect(named(status, 'github').summary).toMatch(/^creds-\S+: 5,000 of 5,000 calls left until \d\d:\d\d UTC$/);

    const shown = await cli(app);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^Status:\s+ok$/m);
    expect(shown.stdout).toMatch(/^CHECK\s+STATUS\s+WHAT$/m);
    expect(shown.stdout).toMatch(/^machine cleanups\s+ok\s+no machine waits for its delete to be confirmed$/m);
  });

  it('warns while a webhook secret rotation is under way, saying whether GitHub still signs with the old secret, and of deliveries no secret signed', async () => {
    const previous = 'the-secret-before-the-rotation';
    const app = statusApp(uniqueName('tq-rotation'), addProvider(rig).name, {}, rig.github, { previousWebhookSecret: previous });
    const waiting = named(await statusOf(app), 'webhooks');
    expect(waiting).toEqual({
      name: 'webhooks',
      status: 'warning',
      summary: 'a secret rotation is under way: api.previousWebhookSecret is still accepted',
      problems: [expect.stringMatching(/^no delivery signed with it since this API process started \(\d\d:\d\d UTC\); once GitHub signs with the new secret only, remove api\.previousWebhookSecret/)],
    });
    for (const deliveryId of ['rotation-1', 'rotation-2']) {
      expect((await app(signedRequest('{}', { event: 'ping', secret: previous, deliveryId }))).status).toBe(200);
    }
    expect((await app(signedRequest('{}', { event: 'ping', secret: WEBHOOK_SECRET }))).status).toBe(200);
    const signed = named(await statusOf(app), 'webhooks');
    expect(signed.status).toBe('warning');
    expect(signed.problems).toEqual([expect.stringMatching(/^2 deliveries signed with it since this API process started, the last at \d\d:\d\d UTC: GitHub still has the old secret; give it the new one; /)]);
    // A delivery signed with neither: GitHub's webhook may have a secret runnerflow does not.
    expect((await app(signedRequest('{}', { event: 'ping', secret: 'a-secret-runnerflow-never-had' }))).status).toBe(401);
    const refused = named(await statusOf(app), 'webhooks');
    expect(refused.summary).toBe('deliveries refused for their signature; a secret rotation is under way: api.previousWebhookSecret is still accepted');
    expect(refused.problems).toEqual([
      expect.stringMatching(/^1 delivery refused since this API process started, the last at \d\d:\d\d UTC, for a signature that matches no configured secret: if they are GitHub's, its webhook has a secret runnerflow does not \(api\.webhookSecret nor api\.previousWebhookSecret\)/),
      expect.stringMatching(/^2 deliveries signed with it since this API process started/),
    ]);
    // Done: the old secret is no longer configured.
    expect(named(await statusOf(statusApp(uniqueName('tq-rotated'), addProvider(rig).name)), 'webhooks')).toEqual({ name: 'webhooks', status: 'ok', summary: 'deliveries verified with api.webhookSecret' });
  });

  it('warns of no webhook secret only where a pool takes its jobs from webhooks', async () => {
    const taskQueue = uniqueName('tq-no-secret');
    const provider = addProvider(rig).name;
    const app = statusApp(taskQueue, provider, {}, rig.github, { webhookSecret: undefined });
    expect(named(await statusOf(app), 'webhooks')).toEqual({ name: 'webhooks', status: 'ok', summary: 'no webhook secret configured; no pool takes jobs from webhooks' });
    const settings = poolSettingsFor(provider, 'no-secret');
    await startPool(rig.client, taskQueue, parseConfig({}), settings);
    try {
      const warned = await eventually(async () => {
        const check = named(await statusOf(statusApp(taskQueue, provider, {}, rig.github, { webhookSecret: undefined })), 'webhooks');
        return check.status === 'warning' ? check : undefined;
      }, 20_000, 'the pool to be listed');
      expect(warned).toEqual({
        name: 'webhooks',
        status: 'warning',
        summary: 'no webhook secret configured: every delivery is refused',
        problems: [expect.stringMatching(/^1 pool in webhook mode: each hears of queued jobs only through the sweep's look at GitHub's queue; set RUNNERFLOW_WEBHOOK_SECRET/)],
      });
    } finally {
      await rig.client.workflow.getHandle(poolWorkflowId(settings.name)).terminate('test done');
    }
  });

  it('warns when the pools outnumber the workflows a worker keeps in memory, saying what to set', async () => {
    const taskQueue = uniqueName('tq-cache');
    const provider = addProvider(rig).name;
    const pools = ['cache-a', 'cache-b', 'cache-c'].map((name) => poolSettingsFor(provider, name));
    for (const settings of pools) await startPool(rig.client, taskQueue, parseConfig({}), settings);
    try {
      const cacheLine = (check: StatusCheck) => check.problems?.find((p) => p.includes('workflowCacheSize'));
      const warned = await eventually(async () => cacheLine(named(await statusOf(statusApp(taskQueue, provider, {}, rig.github, {}, 2)), 'pools')), 20_000, 'the pools to be listed');
      expect(warned).toBe(
        '3 pools and 0 runners at work, but a worker keeps at most 2 workflows in memory (temporal.workflowCacheSize): pools it cannot keep are replayed from their history whenever they wake (a job, a report from a runner, their own audit) or are asked a question; set temporal.workflowCacheSize to at least 50 (1 – 2 MB of worker memory each) and restart the workers, or spread the pools over more workers',
      );
      expect(cacheLine(named(await statusOf(statusApp(taskQueue, provider, {}, rig.github, {}, 3)), 'pools'))).toBeUndefined();
    } finally {
      for (const settings of pools) await rig.client.workflow.getHandle(poolWorkflowId(settings.name)).terminate('test done');
    }
  });

  it('fails when no worker polls the task queue, naming it and what to start, and the CLI exits 3', async () => {
    const taskQueue = uniqueName('tq-nobody');
    const app = statusApp(taskQueue, addProvider(rig).name);
    const status = await statusOf(app);
    expect(status.status).toBe('failing');
    expect(named(status, 'workers')).toEqual({
      name: 'workers',
      status: 'failing',
      summary: `no worker has polled task queue "${taskQueue}" in the last 2 min`,
      problems: [`no runner is created, deleted or checked until one does: start a worker (npm run worker) with task queue "${taskQueue}", namespace "default"`],
    });
    const shown = await cli(app);
    expect(shown.code).toBe(3);
    expect(shown.stdout).toMatch(/^Status:\s+FAILING$/m);
    expect(shown.stdout).toMatch(/^\s+- no runner is created, deleted or checked until one does/m);
    expect(shown.stderr).toBe('error: a check is failing\n');
    const json = await cli(app, '--json');
    expect(json.code).toBe(3);
    expect((JSON.parse(json.stdout) as InstallationStatus).status).toBe('failing');
  });

  it('fails on Temporal alone when it cannot be reached, within the query deadline', async () => {
    const unreachable = testApp(new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), 'unused', { limits: { queryTimeoutMs: 1_000 } });
    const started = Date.now();
    const answer = await unreachable.call('GET', '/api/v1/status');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(answer.status).toBe(200);
    const status = (await answer.json()) as InstallationStatus;
    expect(status.status).toBe('failing');
    expect(status.checks).toEqual([
      { name: 'temporal', status: 'failing', summary: 'namespace "default" is not reachable', problems: [expect.stringMatching(/^Temporal (is not reachable|did not answer in time)/)] },
    ]);
  });

  it('warns when the workers run more than one build, as during a deploy', async () => {
    const provider = addProvider(rig).name;
    const worker = await startTestWorker({ providers: rig.providers, github: rig.github });
    const connection = await NativeConnection.connect({ address: temporalAddress() });
    const other = await Worker.create({
      connection,
      taskQueue: worker.taskQueue,
      buildId: 'runnerflow-older-build',
      // Another process's, as a worker of another build would be: the server lists pollers by identity.
      identity: `${process.pid + 1}@older-host`,
      workflowsPath: fileURLToPath(new URL('../liveness/fixtures/counterfeit-workflows.ts', import.meta.url)),
    });
    const running = other.run();
    try {
      const app = statusApp(worker.taskQueue, provider);
      let seen: StatusCheck | undefined;
      const workers = await eventually(async () => {
        seen = named(await statusOf(app), 'workers');
        return seen.status === 'warning' ? seen : undefined;
      }, 30_000, 'the second build seen').catch((err: Error) => {
        throw new Error(`${err.message}; the check read ${JSON.stringify(seen)}`);
      });
      expect(workers.summary).toMatch(/^2 workers on task queue/);
      expect(workers.problems).toEqual([expect.stringMatching(/^the workers run 2 builds \(.*runnerflow-older-build.*\): a deploy under way/)]);
    } finally {
      other.shutdown();
      await running;
      await connection.close();
      await worker.stop();
    }
  });

  /** Waits for the `pools` check to fail on a pool stuck as `stuckPool` makes it, and checks it names the pool. */
  async function failingPoolsCheck(stuck: Awaited<ReturnType<typeof stuckPool>>): Promise<StatusCheck> {
    const app = statusApp(stuck.taskQueue, stuck.provider);
    const pools = await eventually(async () => {
      const check = named(await statusOf(app), 'pools');
      return check.status === 'failing' ? check : undefined;
    }, 30_000, 'the pool named as failing');
    expect(pools.problems).toEqual([expect.stringMatching(new RegExp(`^pool ${stuck.settings.name}: its workflow tasks are failing, so it starts no runner`))]);
    return pools;
  }

  it('fails on a pool whose workflow tasks keep failing, naming it', async () => {
    const stuck = await stuckPool(rig, 'status-stuck');
    try {
      expect((await failingPoolsCheck(stuck)).summary).toBe('1 pool, 0 answering');
    } finally {
      await stuck.done();
    }
  });

  it('fails on a stuck pool that shows a glance, found through the problems the server reports, not by asking every pool', async () => {
    // Its memo holds a glance, as every pool's does once it has decided: without the server's report
    // the check would take the counts from it and never ask the pool.
    const glance: PoolGlance = { counts: { alive: 0, idle: 0, busy: 0, starting: 0, leaving: 0 }, statuses: {}, agents: {}, queuedJobs: 0, desired: 0, minIdleRunners: 0, at: Date.now() };
    const stuck = await stuckPool(rig, 'status-glanced', { memo: { glance } });
    try {
      await failingPoolsCheck(stuck);
    } finally {
      await stuck.done();
    }
  });

  it('warns of a pool that does not answer, saying why', async () => {
    const provider = addProvider(rig).name;
    const settings = poolSettingsFor(provider, 'status-silent');
    // Its queue's only worker made its first task and left: nothing answers for it now.
    const taskQueue = uniqueName('tq-status-silent');
    const pool = await counterfeitPool(rig.client, taskQueue, settings);
    try {
      const pools = named(await statusOf(statusApp(taskQueue, provider)), 'pools');
      expect(pools.status).toBe('warning');
      expect(pools.summary).toBe('1 pool, 0 answering');
      expect(pools.problems).toEqual([expect.stringMatching(new RegExp(`^pool ${settings.name}: did not answer \\((Temporal did not answer in time|no runnerflow worker polls)`))]);
    } finally {
      await pool.terminate('test done').catch(() => undefined);
    }
  });

  it('fails on credentials GitHub refuses, and warns of credentials near their rate limit or out of reach', async () => {
    const github = new GitHubDouble();
    const app = statusApp(rig.worker.taskQueue, addProvider(rig).name, {}, github);
    const githubCheck = async () => named(await statusOf(app), 'github');

    github.rateLimitAnswer = new GitHubApiError('rate_limit: GitHub answered 401: Bad credentials', 401, false);
    const refused = await githubCheck();
    expect(refused.status).toBe('failing');
    expect(refused.summary).toMatch(/^creds-\S+: refused$/);
    expect(refused.problems).toEqual([
      expect.stringMatching(
        /^GitHub refused credentials creds-\S+ \(rate_limit: GitHub answered 401: Bad credentials\): no runner can be registered with them; put the renewed token in RUNNERFLOW_TEST_UNUSED_TOKEN and restart the processes \(a secret file would be read again without one\)$/,
      ),
    ]);
    expect((await cli(app)).code).toBe(3);

    github.rateLimitAnswer = { limit: 5_000, remaining: 120, resetAt: '2026-11-29T17:00:00.000Z' };
    const low = await githubCheck();
    expect(low.status).toBe('warning');
    expect(low.summary).toMatch(/^creds-\S+: 120 of 5,000 calls left until 17:00 UTC$/);
    expect(low.problems).toEqual([expect.stringMatching(/are near GitHub's rate limit \(120 of 5,000 calls left until 17:00 UTC\)/)]);

    github.rateLimitAnswer = new GitHubRateLimitError('primary', 90_000);
    expect((await githubCheck()).problems).toEqual([expect.stringMatching(/^credentials creds-\S+ are rate limited by GitHub for 90 s more/)]);

    github.rateLimitAnswer = new GitHubApiError('rate_limit: GitHub could not be reached', undefined, true);
    const unreachable = await githubCheck();
    expect(unreachable.status).toBe('warning');
    expect(unreachable.problems).toEqual([expect.stringMatching(/^GitHub could not be asked about credentials creds-\S+ \(rate_limit: GitHub could not be reached\)$/)]);
  });

  it('warns of jobs no pool matched, machines not confirmed deleted, and schedules missing or paused by hand', async () => {
    const provider = addProvider(rig).name;
    // A task queue of its own, where only this test's workflows run: what it counts is what it made.
    const taskQueue = uniqueName('tq-status-warn');
    const worker = await startTestWorker({ taskQueue, providers: rig.providers, github: rig.github });
    const cleanup = rig.client.workflow.getHandle(cleanupWorkflowId(uniqueName('unconfirmed')));
    const unmatched = rig.client.workflow.getHandle(unmatchedJobsWorkflowId(taskQueue));
    const paused = livenessScheduleId(provider, 'machines');
    try {
      await rig.client.workflow.signalWithStart(UNMATCHED_JOBS_WORKFLOW, {
        workflowId: unmatched.workflowId,
        taskQueue,
        args: [],
        signal: unmatchedJobSignal,
        signalArgs: [{ jobId: 717171, labels: ['self-hosted', 'gpu'], repository: 'acme/models', reason: 'no pool has the labels self-hosted, gpu', recordedAt: new Date().toISOString() }],
      });
      // A clean-up under way on a queue no worker takes it from stays running: its machine not confirmed gone.
      await rig.client.workflow.start(MACHINE_CLEANUP_WORKFLOW, { workflowId: cleanup.workflowId, taskQueue, args: [], startDelay: '1 day' });
      await ensureSchedule(rig.client, {
        scheduleId: paused,
        intervalMs: 24 * 3_600_000,
        jitterMs: 0,
        workflowType: LIVENESS_CHECK_WORKFLOW,
        args: [{ provider, check: 'machines' }],
        taskQueue,
      });
      await rig.client.schedule.getHandle(paused).pause('paused by hand for maintenance');
      const app = statusApp(taskQueue, provider, { liveness: true, sweep: true });

      const status = await eventually(async () => {
        const s = await statusOf(app);
        return named(s, 'machine_cleanups').status === 'warning' && named(s, 'unmatched_jobs').status === 'warning' ? s : undefined;
      }, 20_000, 'the unmatched job and the clean-up counted');
      expect(status.status).toBe('warning');
      expect(named(status, 'unmatched_jobs')).toMatchObject({
        summary: '1 job matched no pool',
        problems: ['jobs waiting for labels no pool has ([self-hosted,gpu]): create or widen a pool (`runnerflow jobs unmatched` lists them)'],
      });
      expect(named(status, 'machine_cleanups').summary).toBe('1 machine not confirmed deleted');
      const schedules = named(status, 'schedules');
      expect(schedules.status).toBe('warning');
      expect(schedules.summary).toBe('4 schedules; off in the config: redelivery');
      expect(schedules.problems).toEqual([
        `sweep/${provider}: not there (a worker makes it when it starts with this config)`,
        `${paused}: paused (paused by hand for maintenance), though the config has it on: unpause it, or restart a worker`,
        `liveness/${provider}/github: not there (a worker makes it when it starts with this config)`,
      ]);
      const shown = await cli(app);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/^Status:\s+WARNING$/m);
    } finally {
      await cleanup.terminate('test done').catch(() => undefined);
      await unmatched.terminate('test done').catch(() => undefined);
      await rig.client.schedule.getHandle(paused).delete().catch(() => undefined);
      await worker.stop();
    }
  });
});

describe('what refused credentials say to do', () => {
  const credentials = (auth: Record<string, unknown>) => parseConfig({ github: { credentials: [{ name: 'c', auth }] } }).github.credentials[0]!;

  it('names the secret file to write into, read again by every process without a restart', () => {
    expect(renewalHint(credentials({ type: 'pat', token: { file: '/run/secrets/gh-token' } }))).toBe(
      'write the renewed token into /run/secrets/gh-token: every process uses it from its next call, with no restart',
    );
    expect(renewalHint(credentials({ type: 'app', appId: 1, installationId: 2, privateKey: { file: '/run/secrets/app.pem' } }))).toBe(
      "write the App's new private key (and check its installation id) into /run/secrets/app.pem: every process uses it from its next call, with no restart",
    );
  });

  it('names the variable, which takes a restart', () => {
    expect(renewalHint(credentials({ type: 'app', appId: 1, installationId: 2, privateKey: { env: 'APP_KEY' } }))).toBe(
      "put the App's new private key (and check its installation id) in APP_KEY and restart the processes (a secret file would be read again without one)",
    );
  });
});
