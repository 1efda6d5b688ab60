/**
 * The routes the dashboard reads: the summary with pools counted by phase, the
 * pool view's phases, leaked runners, the sweep's schedules and runs, and the
 * page's own files.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { countRunners, runnerPhase } from '../../api/dashboard/pool-counts';
import { ConfigError, loadConfig, parseConfig } from '../../config/load';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import { ensureSweepSchedules, sweepScheduleId } from '../../worker/sweep-schedule';
import { jobQueuedSignal, poolWorkflowId, type PoolRunnerView } from '../../workflows/pool-messages';
import { addProvider, leakMachine, runningInstance, triggerSweep, useSweepRig } from '../sweep/helpers';
import { eventually, uniqueName } from '../support/temporal';
import { ADMIN_TOKEN, INSTANCE_TOKEN_KEY, expectError, recordingLogger, testApp, validPool } from './support';

const rig = useSweepRig();

const runner = (overrides: Partial<PoolRunnerView>): PoolRunnerView => ({
  name: 'r',
  status: 'running',
  runnerStatus: 'idle',
  settingsVersion: 1,
  since: new Date().toISOString(),
  ...overrides,
});

interface PoolSummaryBody {
  name: string;
  desired?: number;
  counts?: Record<string, number>;
  queuedJobs?: number;
  error?: string;
}

describe('runner phases', () => {
  it('puts every runner in exactly one of starting, idle, busy, leaving; alive is all but leaving', () => {
    const runners = [
      runner({ name: 'a', status: 'pending_create', runnerStatus: 'pending' }),
      runner({ name: 'b', status: 'running', runnerStatus: 'installing' }),
      runner({ name: 'c', runnerStatus: 'idle' }),
      runner({ name: 'd', runnerStatus: 'active', jobId: 1 }),
      runner({ name: 'e', runnerStatus: 'idle', deleteRequested: true }),
      runner({ name: 'f', status: 'deleting', runnerStatus: 'active' }),
      runner({ name: 'g', runnerStatus: 'terminated' }),
      runner({ name: 'h', status: 'error', runnerStatus: 'pending' }),
    ];
    expect(runners.map(runnerPhase)).toEqual(['starting', 'starting', 'idle', 'busy', 'leaving', 'leaving', 'leaving', 'leaving']);
    expect(countRunners(runners)).toEqual({ alive: 4, idle: 1, busy: 1, starting: 2, leaving: 4 });
  });
});

describe('GET /api/v1/summary', () => {
  it('counts each pool by phase with its desired size and queue, and says where the Temporal Web UI is', async () => {
    const api = testApp(rig.client, rig.worker.taskQueue);
    const name = uniqueName('summary').toLowerCase();
    // The API's config names the provider `fake`; on this worker its creates never answer, so the
    // runners stay starting for as long as the test looks at them.
    const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-summary-'));
    rig.providers.set('fake', new FakeProvider({ name: 'fake', stateDir }));
    new FakeProviderControl(stateDir).setFault('create', { hang: true });
    const created = await api.call('POST', '/api/v1/pools', { body: validPool(name, { minIdleRunners: 2, maxRunners: 4 }) });
    expect(created.status).toBe(201);
    await rig.client.workflow.getHandle(poolWorkflowId(name)).signal(jobQueuedSignal, { jobId: 77, labels: ['linux', name] });

    const pool = await eventually(async () => {
      const body = (await (await api.call('GET', '/api/v1/summary')).json()) as { pools: PoolSummaryBody[] };
      const found = body.pools.find((p) => p.name === name);
      return found?.counts?.alive === 3 ? found : undefined;
    }, 30_000, 'three runners alive');
    expect(pool).toMatchObject({ provider: 'fake', enabled: true, minIdleRunners: 2, maxRunners: 4, desired: 3, queuedJobs: 1, deleting: false });
    const { alive, idle, busy, starting } = pool.counts as Record<'alive' | 'idle' | 'busy' | 'starting', number>;
    expect(idle + busy + starting).toBe(alive);

    const detail = (await (await api.call('GET', `/api/v1/pools/${name}`)).json()) as { runners: { phase: string }[]; counts: Record<string, number> };
    expect(detail.runners).toHaveLength(3);
    expect(detail.runners.every((r) => ['starting', 'idle', 'busy', 'leaving'].includes(r.phase))).toBe(true);
    expect(detail.counts.alive).toBe(3);

    const body = (await (await api.call('GET', '/api/v1/summary')).json()) as { temporal: unknown; unmatchedJobs: number };
    expect(body.temporal).toEqual({ namespace: 'default', webUiUrl: 'http://127.0.0.1:8233', taskQueue: rig.worker.taskQueue });
    expect(typeof body.unmatchedJobs).toBe('number');
    await api.call('DELETE', `/api/v1/pools/${name}`);
  });

  it('reports a pool that does not answer in its own entry instead of failing the summary', async () => {
    // No worker polls this task queue, so the pool's query times out.
    const api = testApp(rig.client, uniqueName('no-worker'), { limits: { queryTimeoutMs: 800 } });
    const name = uniqueName('silent').toLowerCase();
    expect((await api.call('POST', '/api/v1/pools', { body: validPool(name) })).status).toBe(201);
    const silent = await eventually(async () => {
      const response = await api.call('GET', '/api/v1/summary');
      expect(response.status).toBe(200);
      const { pools } = (await response.json()) as { pools: PoolSummaryBody[] };
      return pools.find((p) => p.name === name);
    }, 20_000, 'the pool listed');
    expect(silent.error).toMatch(/Temporal did not answer in time|deadline/i);
    expect(silent.counts).toBeUndefined();
    await rig.client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
  });
});

describe('leaked runners and sweeps', () => {
  it('lists leaked runners with leaked=true and shows the sweep that deleted their machine', async () => {
    const provider = addProvider(rig);
    const idle = uniqueName('unscheduled');
    const config = parseConfig({
      temporal: { taskQueue: rig.worker.taskQueue },
      providers: [
        { type: 'fake', name: provider.name, stateDir: provider.stateDir },
        { type: 'fake', name: idle, stateDir: `/tmp/${idle}` },
      ],
      sweep: { interval: '1h', gracePeriod: 0 },
    });
    const app = createApp({
      client: rig.client,
      taskQueue: rig.worker.taskQueue,
      config,
      github: { get: () => rig.worker.github },
      secrets: { adminToken: ADMIN_TOKEN, instanceTokenKey: INSTANCE_TOKEN_KEY },
      logger: recordingLogger(),
    });
    const get = async <T>(path: string): Promise<T> => {
      const res = await app(new Request(`http://127.0.0.1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
      expect(res.status, path).toBe(200);
      return (await res.json()) as T;
    };

    const leaked = await leakMachine(rig, provider);
    const alive = (await runningInstance(rig, provider.name)).workflowId.slice('runner/'.length);
    const { runners } = await get<{ runners: { name: string; leaked: boolean; running: boolean; closeTime?: string }[] }>('/api/v1/runners?leaked=true');
    expect(runners.find((r) => r.name === leaked)).toMatchObject({ leaked: true, running: false, closeTime: expect.any(String) });
    expect(runners.find((r) => r.name === alive)).toBeUndefined();
    const running = await get<{ runners: { name: string }[] }>(`/api/v1/runners`);
    expect(running.runners.map((r) => r.name)).not.toContain(leaked);

    const scheduleId = sweepScheduleId(provider.name);
    await ensureSweepSchedules(rig.client, config, rig.worker.taskQueue);
    const schedule = rig.client.schedule.getHandle(scheduleId);
    try {
      const report = await triggerSweep(rig.client, schedule);
      expect(report.deleted.map((d) => d.name)).toEqual([leaked]);
      const { sweeps } = await get<{ sweeps: Record<string, unknown>[] }>('/api/v1/sweeps?runs=3');
      expect(sweeps.find((s) => s.provider === idle)).toEqual({ provider: idle, scheduleId: sweepScheduleId(idle), scheduled: true, paused: false, intervalMs: 3_600_000, nextRunAt: expect.any(String), runs: [] });
      const sweep = sweeps.find((s) => s.provider === provider.name);
      expect(sweep).toMatchObject({ scheduleId, scheduled: true, paused: false, intervalMs: 3_600_000 });
      expect(sweep!.runs).toEqual([
        expect.objectContaining({
          workflowId: expect.stringMatching(new RegExp(`^${scheduleId}-`)),
          status: 'completed',
          closedAt: expect.any(String),
          result: { listed: 2, owned: 1, deleted: 1, skipped: 0, failed: 0, deletedNames: [leaked], failures: [] },
        }),
      ]);
    } finally {
      await schedule.delete();
      await rig.client.schedule.getHandle(sweepScheduleId(idle)).delete();
    }
    const missing = await get<{ sweeps: Record<string, unknown>[] }>('/api/v1/sweeps');
    expect(missing.sweeps.find((s) => s.provider === provider.name)).toEqual({ provider: provider.name, scheduleId, scheduled: false, runs: [] });

    await expectError(await app(new Request('http://127.0.0.1/api/v1/sweeps?runs=0', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })), 400, 'validation_failed');
  });
});

describe('Temporal Web UI address', () => {
  it('defaults to the dev server UI and follows TEMPORAL_UI_URL, refusing one that is not a URL', () => {
    expect(loadConfig({}).config.temporal.webUiUrl).toBe('http://127.0.0.1:8233');
    expect(parseConfig({ temporal: { webUiUrl: 'https://temporal.example.com' } }).temporal.webUiUrl).toBe('https://temporal.example.com');
    expect(loadConfig({ TEMPORAL_UI_URL: 'https://cloud.example/ui' }).config.temporal.webUiUrl).toBe('https://cloud.example/ui');
    expect(() => loadConfig({ TEMPORAL_UI_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => loadConfig({ TEMPORAL_UI_URL: 'not a url' })).toThrow(/TEMPORAL_UI_URL "not a url" is not a URL/);
  });
});

describe('dashboard files', () => {
  it('serves the page and its modules with a strict content security policy, and nothing else', async () => {
    const api = testApp(rig.client, rig.worker.taskQueue);
    const page = await api.call('GET', '/ui', { token: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script type="module" src="/ui/app.js"></script>');
    const script = await api.call('GET', '/ui/app.js', { token: null });
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain('sessionStorage');
    expect((await api.call('GET', '/ui/style.css', { token: null })).headers.get('content-type')).toBe('text/css; charset=utf-8');

    for (const path of ['/ui/nothing.js', '/ui/..%2Fpackage.json', '/ui/..%2F..%2Fetc%2Fpasswd']) {
      await expectError(await api.call('GET', path, { token: null }), 404, 'not_found');
    }
  });
});
