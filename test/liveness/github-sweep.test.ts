/**
 * The sweep's GitHub side against the GitHub simulator through the real Octokit
 * client: registrations of our pools that no workflow owns are removed; busy ones
 * and live ones are not.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { createGitHubSweepActivities, registrationMatcher } from '../../activities/github-sweep-activities';
import { QUEUED_RUNS_PER_SWEEP } from '../../domain/lost-job-rotation';
import { PoolDirectory } from '../../api/pool-directory';
import { createGitHubRegistry } from '../../github/registry';
import { controllerLabel, type GitHubScope } from '../../github/port';
import { instanceStartOptions } from '../../workflows/instance-options';
import { PROVIDER_SWEEP_WORKFLOW, providerSweep } from '../../workflows/provider-sweep';
import type { SweepArgs, SweepReport } from '../../activities/sweep-activities';
import { runnerInstance } from '../../workflows/runner-instance';
import { poolStateQuery, poolWorkflowId, recentRepositoriesQuery } from '../../workflows/pool-messages';
import { sweepScheduleId } from '../../worker/sweep-schedule';
import { waitForStatus } from '../instance/helpers';
import { eventually, FAST_TIMINGS, instanceInput, uniqueName } from '../support/temporal';
import { api, e2ePool, useE2EStack } from '../e2e/stack';
import { sampleSum, scrape } from '../support/prometheus-text';

const PROVIDER = uniqueName('simulated');
const stack = useE2EStack({ jobDurationMs: 300 }, { simulatedProvider: PROVIDER });

const hex10 = (): string => Array.from({ length: 10 }, () => Math.floor(Math.random() * 16).toString(16)).join('');

async function sweep(gracePeriodMs: number, lostJobAgeMs?: number, lostJobRepositories?: number) {
  return stack.client.workflow.execute(providerSweep, {
    taskQueue: stack.loaded.config.temporal.taskQueue,
    workflowId: uniqueName(`sweep/${PROVIDER}`),
    args: [{ provider: PROVIDER, gracePeriodMs, githubRunners: true, ...(lostJobAgeMs !== undefined ? { lostJobAgeMs } : {}), ...(lostJobRepositories !== undefined ? { lostJobRepositories } : {}) }],
  });
}

/** What an operator runs to sweep a provider now. */
async function sweepScript(provider: string): Promise<string> {
  const script = resolve(import.meta.dirname, '../../scripts/sweep.sh');
  const env = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_CLI: inject('temporalCli') };
  return (await promisify(execFile)('bash', [script, provider], { env })).stdout;
}

/**
 * Runs of a sweep schedule as production makes them (paused, so only the test's triggers run it):
 * each run is handed the last completed run's report by Temporal, and nothing else.
 */
async function scheduledSweeps(lostJobAgeMs?: number, gracePeriodMs = 3_600_000, more: Pick<SweepArgs, 'lostJobRepositories' | 'lostJobRound'> = {}) {
  // The schedule's production id: the e2e stack starts no sweep schedules of its own.
  const scheduleId = sweepScheduleId(PROVIDER);
  const args: SweepArgs = { provider: PROVIDER, gracePeriodMs, githubRunners: true, ...(lostJobAgeMs !== undefined ? { lostJobAgeMs } : {}), ...more };
  const schedule = await stack.client.schedule.create({
    scheduleId,
    spec: { intervals: [{ every: '24h' }] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
    state: { paused: true },
    action: { type: 'startWorkflow', workflowType: PROVIDER_SWEEP_WORKFLOW, workflowId: scheduleId, taskQueue: stack.loaded.config.temporal.taskQueue, args: [args] },
  });
  return {
    async next(trigger = () => schedule.trigger(ScheduleOverlapPolicy.SKIP)): Promise<SweepReport> {
      const taken = (await schedule.describe()).info.numActionsTaken;
      await trigger();
      const started = await eventually(async () => {
        const info = (await schedule.describe()).info;
        return info.numActionsTaken > taken ? info.recentActions.at(-1) : undefined;
      }, 30_000, 'the schedule to start a sweep');
      const report = await stack.client.workflow.getHandle<typeof providerSweep>(started.action.workflow.workflowId, started.action.workflow.firstExecutionRunId).result();
      // The next run is only handed this one's report once the schedule has seen it complete.
      await eventually(async () => ((await schedule.describe()).info.runningActions.length === 0 ? true : undefined), 30_000, 'the schedule to see the sweep complete');
      return report;
    },
    delete: () => schedule.delete(),
  };
}

/** A repository pool, and registrations in its scope made straight at GitHub, as if no runnerflow workflow had made them. */
async function poolWithRegistrations(repo: string, minIdleRunners: number) {
  const pool = e2ePool(repo, { provider: PROVIDER, minIdleRunners, maxRunners: Math.max(minIdleRunners, 3) });
  expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
  const scope: GitHubScope = { kind: 'repo', owner: 'acme', repo };
  const github = createGitHubRegistry(stack.loaded.config, stack.loaded.env).get('default');
  const ours = controllerLabel(stack.loaded.config.controllerId);
  const register = (name: string, extraLabels: string[] = [], installation = ours) =>
    github.createRunnerCredential({ scope, name, labels: [...pool.labels, installation, ...extraLabels], runnerGroupId: 1, workFolder: '_work', jit: true });
  return { pool, scope, register };
}

describe('GitHub registrations no workflow owns', () => {
  it('are removed after the grace period, never a busy one, never a live one', async () => {
    const repo = 'gh-sweep';
    const { pool, scope, register } = await poolWithRegistrations(repo, 1);

    // 1. Registered, then the process crashed before any machine or workflow knew it.
    const untracked = `${pool.name}-${hex10()}`;
    await register(untracked);
    // 2. A runner whose workflow was terminated after registering (its forced removal never ran).
    const orphaned = `${pool.name}-${hex10()}`;
    const input = instanceInput(orphaned, { pool: pool.name, provider: PROVIDER, timings: FAST_TIMINGS }, { github: { credentials: 'default', scope }, labels: pool.labels });
    const handle = await stack.client.workflow.start(runnerInstance, { taskQueue: stack.loaded.config.temporal.taskQueue, ...instanceStartOptions(input) });
    await waitForStatus(handle, 'running');
    await handle.terminate('simulated crash');
    // 3. An unowned registration whose runner is busy with a job: GitHub would refuse, and the job may be real.
    const busy = `${pool.name}-${hex10()}`;
    // Its own extra label: only it can take the job (no pool matches it, so no runner is made for it).
    const credential = await register(busy, ['only-this-one']);
    if (credential.kind !== 'jit') throw new Error('expected a JIT config');
    await stack.sim.startAgent({ jitConfig: credential.encodedJitConfig });
    const job = stack.sim.queueJob({ repository: `acme/${repo}`, labels: [...pool.labels, 'only-this-one'], durationMs: 60_000 });
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.runnerName === busy && j.status === 'in_progress'), 10_000, 'the busy runner to take the job');
    // 4. No workflow, but online: a machine still runs it, which the machine sweep handles first.
    const onlineUntracked = `${pool.name}-${hex10()}`;
    const online = await register(onlineUntracked, ['only-this-one']);
    if (online.kind !== 'jit') throw new Error('expected a JIT config');
    await stack.sim.startAgent({ jitConfig: online.encodedJitConfig });
    // 5. Someone else's runner in the same scope (other naming): never ours to judge.
    const foreign = `build-box-${hex10()}`;
    await register(foreign);
    // 6. Another installation's runner of a pool with the same name and labels, not booted yet.
    const otherInstallation = `${pool.name}-${hex10()}`;
    await register(otherInstallation, [], controllerLabel('staging'));
    // The pool's own idle runner is live.
    const live = await eventually(
      () => stack.sim.runners().find((r) => String(r.name).startsWith(`${pool.name}-`) && ![untracked, orphaned, busy, onlineUntracked, otherInstallation].includes(String(r.name)) && r.status === 'online'),
      30_000,
      'the pool runner',
    );

    // Without a workflow at all, GitHub gives no clock to wait on: the first finding starts one.
    const early = await sweep(3_600_000);
    expect(early.github?.removed).toEqual([]);
    expect(early.github?.skipped).toEqual(
      expect.arrayContaining([
        { name: untracked, reason: 'untracked, first found 0 s ago, inside the 3600 s grace period' },
        { name: orphaned, reason: expect.stringMatching(/^orphaned for \d+ s, inside the 3600 s grace period$/) },
        { name: busy, reason: 'busy at GitHub' },
      ]),
    );
    expect(Object.keys(early.github?.untrackedSince ?? {})).toEqual([`repo:acme/${repo} ${untracked}`]);
    const report = await sweep(0);
    expect(report.github).toMatchObject({ scopes: 1, failed: [] });
    expect(report.github?.removed).toHaveLength(2);
    expect(report.github?.removed).toEqual(
      expect.arrayContaining([
        { name: untracked, scope: `repo:acme/${repo}`, reason: 'untracked' },
        { name: orphaned, scope: `repo:acme/${repo}`, reason: 'orphaned' },
      ]),
    );
    expect(report.github?.skipped).toEqual(
      expect.arrayContaining([
        { name: busy, reason: 'busy at GitHub' },
        { name: onlineUntracked, reason: 'online with no workflow: waits for its machine to be swept' },
      ]),
    );
    expect(report.github?.skipped).toHaveLength(2);
    expect(report.github?.owned).toBeGreaterThanOrEqual(1);
    const left = stack.sim.runners().map((r) => String(r.name));
    expect(left).toEqual(expect.arrayContaining([busy, onlineUntracked, foreign, otherInstallation, String(live.name)]));
    expect(left).not.toContain(untracked);
    expect(left).not.toContain(orphaned);
  });

  it('with no workflow ever, wait the grace period from the first finding, the clock carried from one scheduled sweep to the next', async () => {
    const repo = 'gh-sweep-clock';
    const { pool, register } = await poolWithRegistrations(repo, 0);
    // Left by a crash before any workflow knew it: removed in the end.
    const leftover = `${pool.name}-${hex10()}`;
    await register(leftover);
    // Looks the same at first: a runner that another installation with this controllerId is starting.
    const booting = `${pool.name}-${hex10()}`;
    const credential = await register(booting);
    if (credential.kind !== 'jit') throw new Error('expected a JIT config');
    const key = (name: string) => `repo:acme/${repo} ${name}`;
    const graceMs = 4_000;

    const sweeps = await scheduledSweeps(undefined, graceMs);
    try {
      const first = (await sweeps.next()).github;
      expect(first?.removed).toEqual([]);
      const since = first?.untrackedSince?.[key(leftover)];
      expect(since).toEqual(expect.any(Number));
      expect(first?.untrackedSince?.[key(booting)]).toEqual(expect.any(Number));
      // The next run keeps the first finding's time: a sweep every few minutes never restarts the clock.
      const second = (await sweeps.next()).github;
      expect(second?.removed).toEqual([]);
      expect(second?.untrackedSince?.[key(leftover)]).toBe(since);
      expect(second?.skipped).toContainEqual({ name: leftover, reason: expect.stringMatching(/^untracked, first found \d+ s ago, inside the 4 s grace period$/) });

      await stack.sim.startAgent({ jitConfig: credential.encodedJitConfig });
      await eventually(() => stack.sim.runners().find((r) => r.name === booting && r.status === 'online'), 10_000, 'the booting runner online');
      await new Promise((r) => setTimeout(r, Math.max(0, since! + graceMs + 200 - Date.now())));
      const third = (await sweeps.next()).github;
      expect(third?.removed).toEqual([{ name: leftover, scope: `repo:acme/${repo}`, reason: 'untracked' }]);
      expect(third?.skipped).toContainEqual({ name: booting, reason: 'online with no workflow: waits for its machine to be swept' });
      expect(third?.untrackedSince ?? {}).toEqual({});
      const left = stack.sim.runners().map((r) => String(r.name));
      expect(left).toContain(booting);
      expect(left).not.toContain(leftover);
    } finally {
      await sweeps.delete();
    }
  });

  it("recognises only the pool naming and labels, with this installation's label", () => {
    const matches = registrationMatcher({ name: 'linux-x64', labels: ['self-hosted', 'linux', 'x64'] }, 'prod');
    const runner = (name: string, labels: string[]) => ({ id: 1, name, os: 'linux', status: 'offline' as const, busy: false, labels });
    const prod = controllerLabel('prod');
    expect(matches(runner('linux-x64-0123456789', ['self-hosted', 'Linux', 'X64', prod]))).toBe(true);
    expect(matches(runner('linux-x64-0123456789', ['self-hosted', 'linux', prod]))).toBe(false);
    expect(matches(runner('linux-x64-arm-0123456789', ['linux', 'x64', prod]))).toBe(false);
    expect(matches(runner('linux-x64-012345678', ['linux', 'x64', prod]))).toBe(false);
    // The same pool of another installation in the same organisation, and a runner registered without the label.
    expect(matches(runner('linux-x64-0123456789', ['self-hosted', 'linux', 'x64', controllerLabel('staging')]))).toBe(false);
    expect(matches(runner('linux-x64-0123456789', ['self-hosted', 'linux', 'x64']))).toBe(false);
    expect(registrationMatcher({ name: 'p', runnerPrefix: 'ci', labels: ['gpu'] }, 'prod')(runner('ci-abcdefabcd', ['gpu', prod]))).toBe(true);
  });
});

describe('jobs whose queued webhook was lost', () => {
  it('are routed again by the sweep: a pool takes the one it can, the other shows as unmatched', async () => {
    const repo = 'lost-queued';
    const pool = e2ePool(repo, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 1 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: 2 });
    const lost = stack.sim.queueJob({ repository: `acme/${repo}`, labels: pool.labels });
    const nobodys = stack.sim.queueJob({ repository: `acme/${repo}`, labels: [...pool.labels, 'gpu'] });
    await stack.sim.webhooksIdle();
    // Nothing heard of either: no runner is coming.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(stack.sim.jobs().find((j) => j.id === lost.id)?.status).toBe('queued');

    // The sweep finds pools through visibility, which lags a new pool's memo by seconds on a busy server.
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => (await directory.fetch()).some((p) => p.name === pool.name && p.memo), 30_000, 'the new pool to be listed with its memo');

    // Younger than the age limit: left alone (the webhook may still be on its way).
    expect((await sweep(3_600_000, 3_600_000)).github?.requeued).toEqual([]);
    const report = await sweep(3_600_000, 0);
    expect(report.github?.requeued.map((j) => j.jobId).sort(), JSON.stringify(report.github)).toEqual([lost.id, nobodys.id].sort());

    const done = await eventually(() => stack.sim.jobs().find((j) => j.id === lost.id && j.status === 'completed'), 30_000, 'the lost job to run');
    expect(done.conclusion).toBe('success');
    const unmatched = await api(stack, 'GET', '/api/v1/jobs/unmatched');
    expect(JSON.stringify(unmatched.body)).toContain(String(nobodys.id));
    // A job pools already know is not routed twice.
    const again = await sweep(3_600_000, 0);
    expect(again.github?.requeued.map((j) => j.jobId)).not.toContain(lost.id);
  });

  it('are looked for in a bounded number of queued runs per sweep, the next scheduled sweep going on where the last one stopped', async () => {
    const repo = 'lost-backlog';
    const pool = e2ePool(repo, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 0 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const backlog = 2 * QUEUED_RUNS_PER_SWEEP + 2;
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: backlog });
    // Labels no pool has: every one found goes to routing, and on to the unmatched record.
    const lostJobs = Array.from({ length: backlog }, () => stack.sim.queueJob({ repository: `acme/${repo}`, labels: [...pool.labels, 'nobody'] }));
    const lost = lostJobs.map((job) => job.id);
    await stack.sim.webhooksIdle();
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => (await directory.fetch()).some((p) => p.name === pool.name && p.memo), 30_000, 'the new pool to be listed with its memo');

    const ofRepo = (report: SweepReport) => (report.github?.requeued ?? []).filter((j) => j.repository === `acme/${repo}`).map((j) => j.jobId);
    const runLists = () => stack.sim.stats().callsByOperation['list-jobs-for-workflow-run'] ?? 0;
    const sweeps = await scheduledSweeps(0);
    try {
      const listsBefore = runLists();
      const first = ofRepo(await sweeps.next());
      expect(first).toHaveLength(QUEUED_RUNS_PER_SWEEP);
      // Other repositories' queued runs are looked into too, each repository within its own bound.
      expect(runLists() - listsBefore).toBeLessThanOrEqual(2 * QUEUED_RUNS_PER_SWEEP);
      // The worker keeps nothing between sweeps: the second goes on from what the first reported,
      // through the schedule. Its new runs first, a few of the first sweep's again.
      const secondReport = await sweeps.next();
      const second = ofRepo(secondReport);
      expect(second).toHaveLength(QUEUED_RUNS_PER_SWEEP);
      // A sweep that cannot list the queued runs keeps where the round stood, and the next one goes on from there.
      stack.sim.setFault({ kind: 'server-error', operation: 'list-workflow-runs' });
      let failedReport: SweepReport;
      try {
        failedReport = await sweeps.next();
      } finally {
        stack.sim.clearFaults();
      }
      expect(failedReport.github?.failed).toContainEqual({ target: `queued jobs of repo:acme/${repo}`, error: expect.any(String) });
      expect(ofRepo(failedReport)).toEqual([]);
      const position = (report: SweepReport) => report.github?.lostJobRotation?.[`repo:acme/${repo}`];
      expect(position(secondReport)).toEqual({ newest: expect.any(Number), cursor: expect.any(Number) });
      expect(position(failedReport)).toEqual(position(secondReport));
      const third = ofRepo(await sweeps.next());
      const newInSecond = second.filter((id) => !first.includes(id));
      expect(newInSecond.length).toBeGreaterThanOrEqual(QUEUED_RUNS_PER_SWEEP - 5);
      expect(new Set([...first, ...second, ...third])).toEqual(new Set(lost));
      // The operator's "sweep now" goes through the schedule, so it too goes on where the last one
      // stopped: every run has been looked into, so it finds nothing new and goes on round them.
      const byOperator = await sweeps.next(async () => {
        expect(await sweepScript(PROVIDER)).toContain(`sweep/${PROVIDER} triggered (the schedule itself is paused`);
      });
      // (A sweep starting afresh would report the 25th oldest run as the newest looked into.)
      expect(position(byOperator)?.newest).toBe(Math.max(...lostJobs.map((job) => job.runId)));
      expect(ofRepo(byOperator)).toHaveLength(QUEUED_RUNS_PER_SWEEP);
      expect(ofRepo(byOperator)).not.toEqual(first);
      // A providerSweep started on its own has no last report: it starts again from the oldest runs.
      expect(ofRepo(await sweep(3_600_000, 0))).toEqual(first);
    } finally {
      await sweeps.delete();
    }
  });
});

describe('jobs of an organisation pool whose queued webhook was lost', () => {
  it('are found in the repositories its pools lately had jobs from or that were lately pushed to, the most lately active first, a bounded number a sweep', async () => {
    const org = uniqueName('lost-org').toLowerCase().slice(0, 30);
    const pool = e2ePool(org, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 1, github: { credentials: 'default', scope: { kind: 'org', org } } });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const [quiet, busy, unheard] = ['quiet', 'busy', 'unheard'].map((name) => `${org}/${name}`) as [string, string, string];
    // A job from each of two repositories reaches the pool as usual: it learns where its jobs come from.
    for (const repository of [quiet, busy]) {
      const job = stack.sim.queueJob({ repository, labels: pool.labels });
      await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, `the job of ${repository} to run`);
    }
    const recent = await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(recentRepositoriesQuery);
    expect(recent.map(([repository]) => repository)).toEqual([busy, quiet]);

    // No runner while the sweeps look: one would take any of the org's queued jobs, found or not.
    expect((await api(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 0 })).status).toBe(202);
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: 3 });
    // Queued (pushed) a few milliseconds apart, so that their order is that of their pushes.
    const lost: Record<string, number> = {};
    for (const repository of [quiet, busy, unheard]) {
      lost[repository] = stack.sim.queueJob({ repository, labels: pool.labels }).id;
      await new Promise((r) => setTimeout(r, 20));
    }
    await stack.sim.webhooksIdle();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(stack.sim.jobs().filter((j) => Object.values(lost).includes(j.id)).map((j) => j.status)).toEqual(['queued', 'queued', 'queued']);
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => (await directory.fetch()).some((p) => p.name === pool.name && p.memo), 30_000, 'the new pool to be listed with its memo');

    /** A sweep looking into `repositories` while GitHub answers every call of `operation` with a 502. */
    const sweepWhileGitHubFails = async (operation: 'list-workflow-runs' | 'list-org-repositories', repositories: number) => {
      stack.sim.setFault({ kind: 'server-error', status: 502, operation, times: 40 });
      try {
        return await sweep(3_600_000, 0, repositories);
      } finally {
        stack.sim.clearFaults();
      }
    };
    const ofOrg = (report: SweepReport) => (report.github?.requeued ?? []).filter((j) => j.repository.startsWith(`${org}/`)).map((j) => j.repository);
    const looked = (report: SweepReport) => Object.keys(report.github?.lostJobRotation ?? {}).filter((key) => key.startsWith(`repo:${org}/`));
    // Organisation pools looked at only when the sweep is given repositories to look into.
    const none = await sweep(3_600_000, 0);
    expect(ofOrg(none)).toEqual([]);
    expect(looked(none)).toEqual([]);
    // GitHub failing the listings: each repository's failure is named, and nothing is routed.
    const failing = await sweepWhileGitHubFails('list-workflow-runs', 20);
    expect(ofOrg(failing)).toEqual([]);
    expect(failing.github?.failed).toContainEqual({ target: `queued jobs of repo:${busy}`, error: expect.any(String) });
    expect(failing.github?.failed).toContainEqual({ target: `queued jobs of repo:${quiet}`, error: expect.any(String) });
    expect(failing.github?.failed).toContainEqual({ target: `queued jobs of repo:${unheard}`, error: expect.any(String) });
    // What operators alert on: every job found so is counted.
    const lostCounted = async () => sampleSum((await scrape(`${stack.api.url}/metrics`)).get('runnerflow_sweep_lost_webhook_jobs_total'), { provider: PROVIDER, webhook: 'queued' });
    const countedBefore = await lostCounted();
    // GitHub failing the listing of pushes: named, and the repositories the pools know are looked
    // into all the same, the one most lately queued from first.
    const withoutPushes = await sweepWhileGitHubFails('list-org-repositories', 1);
    expect(withoutPushes.github?.failed).toContainEqual({ target: `repositories pushed to in org:${org}`, error: expect.any(String) });
    expect(ofOrg(withoutPushes)).toEqual([busy]);
    expect(looked(withoutPushes)).toEqual([`repo:${busy}`]);
    // Two repositories a sweep: the two most lately active. The pool heard of busy's job as the
    // sweep routed it, and unheard, the repository whose first job was the lost one, was pushed to
    // after anything else; quiet waits.
    const two = await sweep(3_600_000, 0, 2);
    expect(ofOrg(two), JSON.stringify(two.github)).toEqual([unheard]);
    expect(looked(two).sort()).toEqual([`repo:${busy}`, `repo:${unheard}`].sort());
    // More: every repository heard from or pushed to; the jobs routed before are known now.
    const all = await sweep(3_600_000, 0, 20);
    expect(ofOrg(all), JSON.stringify(all.github)).toEqual([quiet]);
    expect(looked(all).sort()).toEqual([`repo:${busy}`, `repo:${quiet}`, `repo:${unheard}`].sort());
    const sweeps = [withoutPushes, two, all];
    expect(sweeps.flatMap(ofOrg).sort()).toEqual([busy, quiet, unheard].sort());
    expect((await lostCounted()) - countedBefore).toBe(sweeps.reduce((sum, report) => sum + (report.github?.requeued.length ?? 0), 0));
    expect((await api(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 1 })).status).toBe(202);
    for (const repository of [busy, quiet, unheard]) {
      await eventually(() => stack.sim.jobs().find((j) => j.id === lost[repository] && j.status === 'completed'), 30_000, `the lost job of ${repository} to run`);
    }
  });
});

describe('a repository an organisation pool heard from that is gone since', () => {
  it('is named once by the look for lost jobs and left alone a while, not failed on every sweep', async () => {
    const org = uniqueName('gone-org').toLowerCase().slice(0, 30);
    const pool = e2ePool(org, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 1, github: { credentials: 'default', scope: { kind: 'org', org } } });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const [gone, kept] = [`${org}/renamed-away`, `${org}/app`];
    for (const repository of [gone, kept]) {
      const job = stack.sim.queueJob({ repository, labels: pool.labels });
      await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, `the job of ${repository} to run`);
    }
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => (await directory.fetch()).some((p) => p.name === pool.name && p.memo), 30_000, 'the new pool to be listed with its memo');
    // Renamed (or deleted, or made private to these credentials): GitHub answers 404 for it from now on.
    stack.sim.setFault({ kind: 'unreadable-repository', repository: gone });
    const refusals = (report: SweepReport) => (report.github?.failed ?? []).filter((f) => f.target.includes(gone));
    const looked = (report: SweepReport) => Object.keys(report.github?.lostJobRotation ?? {}).filter((key) => key.startsWith(`repo:${org}/`));
    const sweeps = await scheduledSweeps(0, 3_600_000, { lostJobRepositories: 20 });
    try {
      const first = await sweeps.next();
      expect(refusals(first)).toEqual([{ target: `queued jobs of repo:${gone}`, error: expect.stringContaining(`repo:${gone} is gone, or the credentials of org:${org} cannot read it`) }]);
      expect(looked(first)).toEqual([`repo:${kept}`]);
      const refusedAt = first.github?.unreadable?.[`repo:${gone}`];
      expect(refusedAt).toEqual(expect.any(Number));
      // The next sweeps leave it alone, and say nothing more of it; the repository still there is looked into as before.
      for (let i = 0; i < 2; i++) {
        const next = await sweeps.next();
        expect(refusals(next)).toEqual([]);
        expect(next.github?.unreadable?.[`repo:${gone}`]).toBe(refusedAt);
        expect(looked(next)).toEqual([`repo:${kept}`]);
      }
    } finally {
      await sweeps.delete();
      stack.sim.clearFaults();
    }
  });
});

describe('a job of an organisation pool queued by a schedule in a repository the pools never heard of, its webhook lost', () => {
  it("is found by the round of the organisation's repositories, a page a sweep, the round carried from one scheduled sweep to the next", async () => {
    const org = uniqueName('round-org').toLowerCase().slice(0, 30);
    const pool = e2ePool(org, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 0, github: { credentials: 'default', scope: { kind: 'org', org } } });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    // Five repositories whose runs only a schedule started (none pushed to lately), none of whose
    // jobs the pool heard of: neither of the lists of the most lately active names them.
    const repositories = ['r1', 'r2', 'r3', 'r4', 'r5'].map((name) => `${org}/${name}`);
    for (const repository of repositories) {
      const job = stack.sim.queueJob({ repository, labels: ['no-pool-has-these'], event: 'schedule' });
      expect(stack.sim.cancelJob(job.id)).toBe(true);
    }
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: 1 });
    const lost = stack.sim.queueJob({ repository: repositories[3]!, labels: pool.labels, event: 'schedule' });
    await stack.sim.webhooksIdle();
    expect(stack.sim.stats().webhooks.lost).toBeGreaterThanOrEqual(1);
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => (await directory.fetch()).some((p) => p.name === pool.name && p.memo), 30_000, 'the new pool to be listed with its memo');

    const ofOrg = (report: SweepReport) => (report.github?.requeued ?? []).filter((j) => j.repository.startsWith(`${org}/`)).map((j) => j.jobId);
    const looked = (report: SweepReport) => Object.keys(report.github?.lostJobRotation ?? {}).filter((key) => key.startsWith(`repo:${org}/`)).sort();
    const round = (report: SweepReport) => report.github?.repositoryRound?.[`org:${org}`];
    // Without the round, the most lately active repositories are looked into, and the job is not found.
    const without = await sweep(3_600_000, 0, 20);
    expect(ofOrg(without)).toEqual([]);
    expect(looked(without)).toEqual([]);

    const sweeps = await scheduledSweeps(0, 3_600_000, { lostJobRepositories: 20, lostJobRound: 2 });
    try {
      const first = await sweeps.next();
      expect(looked(first)).toEqual([`repo:${org}/r1`, `repo:${org}/r2`]);
      expect(ofOrg(first)).toEqual([]);
      expect(round(first)).toBe(2);
      // GitHub failing the listing: named, and the round stays where it stood.
      stack.sim.setFault({ kind: 'server-error', status: 502, operation: 'list-org-repositories', times: 20 });
      let failed: SweepReport;
      try {
        failed = await sweeps.next();
      } finally {
        stack.sim.clearFaults();
      }
      expect(failed.github?.failed).toContainEqual({ target: `repositories in turn in org:${org}`, error: expect.any(String) });
      expect(round(failed)).toBe(2);
      const second = await sweeps.next();
      expect(looked(second)).toEqual([`repo:${org}/r3`, `repo:${org}/r4`]);
      expect(ofOrg(second)).toEqual([lost.id]);
      expect(round(second)).toBe(3);
      // The last page: the round starts again. (r4 is looked into as one the pool has lately had a
      // job from, since the sweep routed its job to it.)
      const third = await sweeps.next();
      expect(looked(third)).toEqual([`repo:${org}/r4`, `repo:${org}/r5`]);
      expect(round(third)).toBe(1);
    } finally {
      await sweeps.delete();
    }
    expect((await api(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 1 })).status).toBe(202);
    await eventually(() => stack.sim.jobs().find((j) => j.id === lost.id && j.status === 'completed'), 30_000, 'the lost job to run');
  });
});

describe("a lost job of an enterprise pool, in a repository of any of the enterprise's organisations", () => {
  it('is found in the repositories its pools lately had jobs from, then in their organisations in turn; what its credentials may not read is named once and left alone a while', async () => {
    const enterprise = uniqueName('lost-ent').toLowerCase().slice(0, 30);
    const pool = e2ePool(enterprise, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 1, github: { credentials: 'default', scope: { kind: 'enterprise', enterprise } } });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const [orgA, orgB] = [`${enterprise}-a`, `${enterprise}-b`];
    const [readable, hidden, nightly] = [`${orgA}/app`, `${orgB}/private`, `${orgA}/nightly`];
    // A job from each of two organisations' repositories reaches the pool as usual: it learns where its jobs come from.
    for (const repository of [readable, hidden]) {
      const job = stack.sim.queueJob({ repository, labels: pool.labels });
      await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, `the job of ${repository} to run`);
    }
    // No runner while the sweeps look: one would take the queued jobs, found or not.
    expect((await api(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 0 })).status).toBe(202);
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: 3 });
    const lost = {
      [readable]: stack.sim.queueJob({ repository: readable, labels: pool.labels }).id,
      [hidden]: stack.sim.queueJob({ repository: hidden, labels: pool.labels }).id,
      // A repository the pool never heard from, whose run a schedule started: only its organisation's round finds it.
      [nightly]: stack.sim.queueJob({ repository: nightly, labels: pool.labels, event: 'schedule' }).id,
    };
    await stack.sim.webhooksIdle();
    expect(stack.sim.jobs().filter((j) => Object.values(lost).includes(j.id)).map((j) => j.status)).toEqual(['queued', 'queued', 'queued']);
    const directory = new PoolDirectory(stack.client, 0);
    await eventually(async () => (await directory.fetch()).some((p) => p.name === pool.name && p.memo), 30_000, 'the new pool to be listed with its memo');

    const found = (report: SweepReport) => (report.github?.requeued ?? []).filter((j) => j.repository.startsWith(enterprise)).map((j) => j.repository).sort();
    const refusals = (report: SweepReport) => (report.github?.failed ?? []).filter((f) => f.target.includes(enterprise));
    const turn = (report: SweepReport) => report.github?.repositoryRound?.[`enterprise:${enterprise}`];
    // Enterprise pools are looked at only when the sweep is given repositories to look into.
    expect(found(await sweep(3_600_000, 0))).toEqual([]);

    // The enterprise's credentials may not read one organisation's private repository: GitHub answers 404.
    stack.sim.setFault({ kind: 'unreadable-repository', repository: hidden, times: 1 });
    const sweeps = await scheduledSweeps(0, 3_600_000, { lostJobRepositories: 20, lostJobRound: 5 });
    try {
      // The repositories heard from, then the first organisation's turn: its round finds the scheduled job.
      const first = await sweeps.next();
      expect(found(first)).toEqual([readable, nightly].sort());
      expect(refusals(first)).toEqual([
        { target: `queued jobs of repo:${hidden}`, error: expect.stringContaining(`repo:${hidden} is gone, or the credentials of enterprise:${enterprise} cannot read it: left alone for 6 h`) },
      ]);
      const refusedAt = first.github?.unreadable?.[`repo:${hidden}`];
      expect(refusedAt).toEqual(expect.any(Number));
      expect(turn(first)).toBe(1);
      expect(first.github?.repositoryRound?.[`org:${orgA}`]).toBe(1);
      // The next sweep leaves the repository alone, in the heard list and in its organisation's turn
      // alike, and says nothing more of it: the refusal is carried on as it was. (GitHub would answer
      // now: the fault was for one call.) Its organisation's listing is refused too (403): named once,
      // and left alone with its round where it stood.
      // (Every organisation's listings are refused during that sweep: other tests' organisation pools list theirs too.)
      stack.sim.setFault({ kind: 'server-error', status: 403, operation: 'list-org-repositories', times: 50 });
      const second = await sweeps.next();
      stack.sim.clearFaults();
      expect(found(second)).toEqual([]);
      expect(refusals(second)).toEqual([
        { target: `repositories pushed to in org:${orgB}`, error: expect.stringContaining(`org:${orgB} is gone, or the credentials of enterprise:${enterprise} cannot read it`) },
      ]);
      expect(second.github?.unreadable).toMatchObject({ [`repo:${hidden}`]: refusedAt, [`org:${orgB}`]: expect.any(Number) });
      expect(second.github?.repositoryRound?.[`org:${orgB}`]).toBeUndefined();
      expect(turn(second)).toBe(0);
      // Round again to the first organisation; the second's refusals are carried on, unsaid.
      const third = await sweeps.next();
      expect(refusals(third)).toEqual([]);
      // (Other tests' organisations were refused that 403 too, and are left alone alike.)
      expect(Object.keys(third.github?.unreadable ?? {}).filter((key) => key.includes(enterprise)).sort()).toEqual([`org:${orgB}`, `repo:${hidden}`]);
      expect(turn(third)).toBe(1);
    } finally {
      await sweeps.delete();
      stack.sim.clearFaults();
    }
    // Once it is not left alone (here: a sweep handed no earlier result), it is looked into again, and its lost job found.
    const again = await sweep(3_600_000, 0, 20);
    expect(found(again)).toEqual([hidden]);
    expect(again.github?.unreadable).toBeUndefined();
    expect((await api(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 1 })).status).toBe(202);
    for (const repository of [readable, hidden, nightly]) {
      await eventually(() => stack.sim.jobs().find((j) => j.id === lost[repository] && j.status === 'completed'), 30_000, `the lost job of ${repository} to run`);
    }
  });
});

describe('jobs a pool holds as queued that GitHub has run', () => {
  it('are taken out of the pool by the sweep, and the runner kept idle for them leaves', async () => {
    const repo = 'settled-job';
    const idleTimeout = 1_500;
    const pool = e2ePool(repo, { provider: PROVIDER, minIdleRunners: 0, maxRunners: 2, idleTimeout });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const view = () => stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery);
    // Neither event that says the job was taken arrives: not its pool, nor the runner that takes it, hears of it.
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'in_progress', times: 1 });
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'completed', times: 1 });
    const job = stack.sim.queueJob({ repository: `acme/${repo}`, labels: pool.labels });
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, 'the job to run');
    await stack.sim.webhooksIdle();
    expect(stack.sim.stats().webhooks.lost).toBeGreaterThanOrEqual(2);

    // The pool still counts the job as demand: a runner stays idle for it well past its idle timeout.
    const heldFor = (v: Awaited<ReturnType<typeof view>>) => v.queuedJobs.some((j) => j.jobId === job.id) && v.runners.some((r) => r.runnerStatus === 'idle');
    await eventually(async () => heldFor(await view()), 30_000, 'a runner idle for the job that has run');
    await new Promise((r) => setTimeout(r, 3 * idleTimeout));
    expect(heldFor(await view())).toBe(true);

    // Queued for less than the age limit: left alone (its events may still be on their way).
    expect((await sweep(3_600_000, 3_600_000)).github?.dequeued ?? []).toEqual([]);
    // GitHub failing the lookup: the job stays, the failure is named, and the next sweep looks again.
    stack.sim.setFault({ kind: 'server-error', status: 502, operation: 'get-job-for-workflow-run', times: 20 });
    let failing: SweepReport;
    try {
      failing = await sweep(3_600_000, 0);
    } finally {
      stack.sim.clearFaults();
    }
    expect(failing.github?.dequeued ?? []).toEqual([]);
    expect(failing.github?.failed).toContainEqual({ target: `queued job ${job.id} of pool ${pool.name}`, error: expect.any(String) });
    expect(heldFor(await view())).toBe(true);
    // A worker whose config no longer has the pool's credentials: that pool's look fails, named, and the sweep goes on.
    const config = stack.loaded.config;
    const withoutCredentials = createGitHubRegistry({ ...config, github: { ...config.github, credentials: config.github.credentials.filter((c) => c.name !== 'default') } }, stack.loaded.env);
    const lacking = await createGitHubSweepActivities({ controllerId: config.controllerId, client: stack.client, namespace: config.temporal.namespace, github: withoutCredentials }).sweepGitHubRunners({
      provider: PROVIDER,
      gracePeriodMs: 3_600_000,
      lostJobAgeMs: 0,
    });
    expect(lacking.dequeued ?? []).toEqual([]);
    expect(lacking.failed).toContainEqual({ target: `queued job ${job.id} of pool ${pool.name}`, error: expect.stringContaining('no GitHub credentials named "default"') });
    expect(heldFor(await view())).toBe(true);
    const report = await sweep(3_600_000, 0);
    expect(report.github?.dequeued).toEqual([{ pool: pool.name, jobId: job.id, status: 'completed' }]);
    await eventually(async () => {
      const v = await view();
      return v.queuedJobs.length === 0 && v.runners.length === 0 && v.target === 0;
    }, 30_000, 'the pool to let its idle runner go');
    // Nothing left to take out: the next sweep looks nothing up.
    const jobLookups = () => stack.sim.stats().callsByOperation['get-job-for-workflow-run'] ?? 0;
    const before = jobLookups();
    expect((await sweep(3_600_000, 0)).github?.dequeued ?? []).toEqual([]);
    expect(jobLookups()).toBe(before);
  });
});
