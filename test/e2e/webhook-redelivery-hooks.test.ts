/**
 * Token credentials have no App webhook: their events come through the webhooks of the
 * repositories and organisations their pools register in. A `queued` that found the API
 * down is asked for again through the webhook that failed to deliver it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { redeliveryScheduleId } from '../../worker/redelivery-schedule';
import type { RedeliveryReport } from '../../activities/webhook-redelivery-activities';
import type { CredentialsRedelivery } from '../../api/dashboard/redelivery-runs';
import { sampleSum, scrape } from '../support/prometheus-text';
import { eventually, uniqueName } from '../support/temporal';
import { poolWorkflowId, recentRepositoriesQuery } from '../../workflows/pool-messages';
import { SIMULATED_PROVIDER } from '../../devstack/stack';
import { api, e2ePool, useE2EStack, type E2EStack } from './stack';

const credentials = uniqueName('token').toLowerCase();
const stack = useE2EStack(
  // Scale sets' message polls answered within a second, so that their listeners stop at once.
  { jobDurationMs: 300, longPollMs: 1_000 },
  {
    githubTokenCredentials: credentials,
    // The webhook URL is where the stack's simulator delivers, the API's; webhooks are looked up again every second.
    config: { redelivery: { interval: '1s', hookRefresh: '1s', firstDelay: '500ms', maxDelay: '2s', maxAttempts: 5 } },
  },
);

afterAll(async () => {
  // The schedule lives in the server, not in the stack: without a worker its runs would pile up.
  await stack.client?.schedule.getHandle(redeliveryScheduleId(credentials)).delete().catch(() => undefined);
});

async function completedReports(s: E2EStack): Promise<RedeliveryReport[]> {
  const description = await s.client.schedule.getHandle(redeliveryScheduleId(credentials)).describe();
  const results: RedeliveryReport[] = [];
  for (const action of description.info.recentActions) {
    const handle = s.client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId);
    if ((await handle.describe()).status.name === 'COMPLETED') results.push((await handle.result()) as RedeliveryReport);
  }
  return results;
}

describe('failed webhook deliveries with token credentials', () => {
  it("jobs whose queued webhooks found the API down get their runners, through their repository's and organisation's webhooks", async () => {
    const repoPool = e2ePool('hooked', { github: { credentials, scope: { kind: 'repo', owner: 'acme', repo: 'hooked' } } });
    const orgPool = e2ePool('hooked-org', { labels: ['self-hosted', 'linux', 'hooked-org'], github: { credentials, scope: { kind: 'org', org: 'hooked-org' } } });
    for (const pool of [repoPool, orgPool]) expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const apiHook = `${stack.api.url}/webhooks/github`;

    // The API is out of reach while the jobs are queued: GitHub records the deliveries as failed and leaves them.
    stack.sim.setWebhook({ url: 'http://127.0.0.1:9/webhooks/github' });
    const repoJob = stack.sim.queueJob({ repository: 'acme/hooked', labels: ['self-hosted', 'linux', 'hooked'] });
    const orgJob = stack.sim.queueJob({ repository: 'hooked-org/app', labels: ['self-hosted', 'linux', 'hooked-org'] });
    await stack.sim.webhooksIdle();
    const failedQueued = stack.sim.deliveries().filter((d) => d.action === 'queued' && d.status === 'error');
    expect(failedQueued).toHaveLength(2);
    stack.sim.setWebhook({ url: apiHook });

    for (const [job, pool] of [
      [repoJob, repoPool],
      [orgJob, orgPool],
    ] as const) {
      const done = await eventually(() => {
        const j = stack.sim.jobs().find((x) => x.id === job.id);
        return j?.status === 'completed' ? j : undefined;
      }, 45_000, `job ${job.id} run on a runner of pool ${pool.name}`);
      expect(done.runnerName).toMatch(new RegExp(`^${pool.name}-`));
    }
    // The same deliveries (one GUID each), sent again at runnerflow's request, reached the API.
    for (const failed of failedQueued) expect(stack.sim.deliveries().filter((d) => d.id === failed.id).map((d) => d.status)).toContain(200);

    // The passes name the two webhooks they follow, and carry each one's state to the next pass.
    const reports = await eventually(async () => {
      const results = await completedReports(stack);
      const asked = new Set(results.flatMap((r) => r.redelivered));
      return failedQueued.every((f) => asked.has(f.id)) ? results : undefined;
    }, 20_000, 'passes that asked for both deliveries again');
    const last = reports.at(-1)!;
    expect(last.hooks?.map((h) => h.replace(/ hook \d+$/, '')).sort()).toEqual(['org:hooked-org', 'repo:acme/hooked']);
    expect(last.state.hooks?.streams.every((s) => (s.newestId ?? 0) > 0)).toBe(true);
    expect(last.failed).toEqual([]);

    // What operators read: the schedule and its last passes, through the API.
    const view = await api(stack, 'GET', '/api/v1/redeliveries?runs=20');
    expect(view.status).toBe(200);
    const { redeliveries } = view.body as { redeliveries: CredentialsRedelivery[] };
    const ours = redeliveries.find((r) => r.credentials === credentials)!;
    expect(ours).toMatchObject({ scheduleId: redeliveryScheduleId(credentials), scheduled: true, paused: false, intervalMs: 1_000 });
    expect(ours.runs.reduce((n, r) => n + (r.result?.redelivered ?? 0), 0)).toBeGreaterThanOrEqual(2);
    expect(ours.runs.find((r) => r.result)?.result?.hooks).toHaveLength(2);
    expect((await api(stack, 'GET', '/api/v1/redeliveries?runs=0')).status).toBe(400);

    // What operators alert on: the redeliveries are counted per credentials, and the last pass is timed.
    const families = await scrape(`${stack.api.url}/metrics`);
    expect(sampleSum(families.get('runnerflow_webhook_redeliveries_total'), { credentials, outcome: 'redelivered' })).toBeGreaterThanOrEqual(2);
    expect(sampleSum(families.get('runnerflow_webhook_redeliveries_total'), { credentials, outcome: 'given_up' })).toBe(0);
    expect(sampleSum(families.get('runnerflow_webhook_redelivery_last_run_timestamp_seconds'), { credentials })).toBeGreaterThan(Date.now() / 1000 - 60);
  });

  it("an enterprise pool's job whose queued webhook found the API down gets its runner, through the webhook of the organisation its pool has had jobs from", async () => {
    const enterprise = uniqueName('ent').toLowerCase();
    const org = `${enterprise}-org`;
    const pool = e2ePool(enterprise, { labels: ['self-hosted', 'linux', enterprise], github: { credentials, scope: { kind: 'enterprise', enterprise } } });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    // A first job reaches the pool as usual: it learns which organisation its jobs come from.
    const first = stack.sim.queueJob({ repository: `${org}/app`, labels: pool.labels });
    await eventually(() => stack.sim.jobs().find((j) => j.id === first.id && j.status === 'completed'), 45_000, 'the first job run');

    const sentBefore = stack.sim.deliveries().length;
    stack.sim.setWebhook({ url: 'http://127.0.0.1:9/webhooks/github' });
    const job = stack.sim.queueJob({ repository: `${org}/app`, labels: pool.labels });
    await stack.sim.webhooksIdle();
    const failed = stack.sim.deliveries().slice(sentBefore).filter((d) => d.action === 'queued' && d.status === 'error');
    expect(failed).toHaveLength(1);
    stack.sim.setWebhook({ url: `${stack.api.url}/webhooks/github` });

    const done = await eventually(() => {
      const j = stack.sim.jobs().find((x) => x.id === job.id);
      return j?.status === 'completed' ? j : undefined;
    }, 45_000, `job ${job.id} run on a runner of the enterprise pool`);
    expect(done.runnerName).toMatch(new RegExp(`^${pool.name}-`));
    const reports = await eventually(async () => {
      const results = await completedReports(stack);
      return results.some((r) => r.hooks?.some((h) => h.startsWith(`org:${org} hook `))) ? results : undefined;
    }, 20_000, "a pass following the organisation's webhook");
    // The same delivery (one GUID), sent again at runnerflow's request through that webhook, reached the API.
    expect(reports.flatMap((r) => r.redelivered)).toContain(failed[0]!.id);
    expect(stack.sim.deliveries().filter((d) => d.id === failed[0]!.id).map((d) => d.status)).toContain(200);
  });

  it("an enterprise scale set's job events that found the API down are asked for again, through the webhook of the organisation its jobs come from", async () => {
    const enterprise = uniqueName('ent-ss').toLowerCase();
    const org = `${enterprise}-org`;
    const name = uniqueName('ss').toLowerCase().slice(0, 40);
    const pool = { name, mode: 'scaleSet', github: { credentials, scope: { kind: 'enterprise', enterprise } }, labels: ['self-hosted', 'linux'], provider: SIMULATED_PROVIDER, maxRunners: 2, bootstrapTimeout: 20_000, idleTimeout: 500 };
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    // A scale set's jobs name it in `runs-on`; the listener acquires them, and no webhook brings one to the pool.
    const runJob = async (): Promise<number> => {
      const job = stack.sim.queueJob({ repository: `${org}/app`, labels: [name] });
      await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 45_000, `job ${job.id} run by the scale set`);
      return job.id;
    };
    await runJob();
    // The job's start, as the listener heard it, told the pool where its jobs come from.
    const recent = await stack.client.workflow.getHandle(poolWorkflowId(name)).query(recentRepositoriesQuery);
    expect(recent.map(([repository]) => repository)).toContain(`${org}/app`);

    // The API out of reach for a whole job: the scale set runs it all the same, and GitHub keeps its events failed.
    const sentBefore = stack.sim.deliveries().length;
    stack.sim.setWebhook({ url: 'http://127.0.0.1:9/webhooks/github' });
    const jobId = await runJob();
    await stack.sim.webhooksIdle();
    const failed = stack.sim.deliveries().slice(sentBefore).filter((d) => d.status === 'error');
    expect(failed.map((d) => d.action).sort()).toEqual(['completed', 'in_progress', 'queued']);
    stack.sim.setWebhook({ url: `${stack.api.url}/webhooks/github` });

    const reports = await eventually(async () => {
      const results = await completedReports(stack);
      const asked = new Set(results.flatMap((r) => r.redelivered));
      return failed.every((f) => asked.has(f.id)) ? results : undefined;
    }, 30_000, `passes that asked again for job ${jobId}'s three events`);
    expect(reports.some((r) => r.hooks?.some((h) => h.startsWith(`org:${org} hook `)))).toBe(true);
    // The same deliveries (one GUID each), sent again through the organisation's webhook, reached the API
    // (a 202 for the events of a runner that has left since).
    for (const f of failed) expect(stack.sim.deliveries().filter((d) => d.id === f.id).some((d) => typeof d.status === 'number' && d.status < 300)).toBe(true);
    expect((await api(stack, 'DELETE', `/api/v1/pools/${name}`)).status).toBeLessThan(300);
  });
});
