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
import { readPoolSnapshots } from '../../api/pool-metrics';
import { PoolDirectory } from '../../api/pool-directory';
import { startPool } from '../../api/pool-settings';
import { poolSettingsSchema } from '../../domain/pool';
import { countRunners, runnerPhase } from '../../domain/pool-counts';
import { ConfigError, loadConfig, parseConfig } from '../../config/load';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import { ensureSweepSchedules, sweepScheduleId } from '../../worker/sweep-schedule';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';
import { forceDeleteSignal } from '../../workflows/messages';
import { jobQueuedSignal, poolWorkflowId, type PoolGlance, type PoolRunnerView } from '../../workflows/pool-messages';
import { addProvider, leakMachine, runningInstance, triggerSweep, useSweepRig } from '../sweep/helpers';
import { awayFromTheHour, eventually, uniqueName } from '../support/temporal';
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
  glanceAt?: string;
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
      // Asked of the pool until the glance it writes into its memo is listed; from the glance after.
      return found?.counts?.alive === 3 && found.glanceAt ? found : undefined;
    }, 30_000, 'three runners alive, from the pool\'s glance');
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

  it('shows a pool from the glance in its memo without asking it, as the metrics gauges do, and asks a pool whose glance is misshapen', async () => {
    // No worker polls this task queue: a query would time out, so counts shown come from the memo.
    const taskQueue = uniqueName('no-worker');
    const api = testApp(rig.client, taskQueue, { limits: { queryTimeoutMs: 800 } });
    const name = uniqueName('glanced').toLowerCase();
    const settings = poolSettingsSchema.parse(validPool(name, { minIdleRunners: 1, maxRunners: 5 }));
    const glance: PoolGlance = {
      counts: { alive: 3, idle: 1, busy: 1, starting: 1, leaving: 1 },
      statuses: { running: 3, deleting: 1 },
      agents: { idle: 1, active: 1, pending: 2 },
      queuedJobs: 4,
      desired: 5,
      minIdleRunners: 1,
      at: Date.parse('2026-12-01T10:00:00Z'),
    };
    await startPool(rig.client, taskQueue, parseConfig({}), settings, { glance });
    // A glance that is not one (written by hand, say) is not believed: that pool is asked.
    const misshapen = poolSettingsSchema.parse(validPool(`${name}-x`));
    await startPool(rig.client, taskQueue, parseConfig({}), misshapen, { glance: { ...glance, counts: { alive: -1, idle: 'many' } } });
    try {
      const shown = await eventually(async () => {
        const { pools } = (await (await api.call('GET', '/api/v1/summary')).json()) as { pools: PoolSummaryBody[] };
        return pools.find((p) => p.name === name);
      }, 20_000, 'the pool listed');
      expect(shown).toMatchObject({ counts: glance.counts, desired: 5, queuedJobs: 4, minIdleRunners: 1, maxRunners: 5, glanceAt: '2026-12-01T10:00:00.000Z' });
      expect(shown.error).toBeUndefined();
      const asked = await eventually(async () => {
        const { pools } = (await (await api.call('GET', '/api/v1/summary')).json()) as { pools: PoolSummaryBody[] };
        return pools.find((p) => p.name === misshapen.name);
      }, 20_000, 'the pool with a misshapen glance listed');
      expect(asked.error).toMatch(/Temporal did not answer in time|deadline/i);
      expect(asked.counts).toBeUndefined();

      const directory = new PoolDirectory(rig.client, 0, taskQueue);
      const unread: string[] = [];
      const fromGlance = await readPoolSnapshots(rig.client, directory, { queryTimeoutMs: 800, fromGlance: true, onPoolReadFailed: (pool) => unread.push(pool) });
      expect(fromGlance).toEqual([{ pool: name, provider: 'fake', runnersByStatus: glance.statuses, runnersByAgent: glance.agents, queuedJobs: 4 }]);
      expect(unread).toEqual([misshapen.name]);
      const failed: string[] = [];
      const everyPoolAsked = await readPoolSnapshots(rig.client, directory, { queryTimeoutMs: 800, onPoolReadFailed: (pool) => failed.push(pool) });
      expect(everyPoolAsked).toEqual([]);
      expect(failed.sort()).toEqual([name, misshapen.name].sort());
    } finally {
      await rig.client.workflow.getHandle(poolWorkflowId(name)).terminate('test done');
      await rig.client.workflow.getHandle(poolWorkflowId(misshapen.name)).terminate('test done');
    }
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

/**
 * The API over the sweep rig's worker, its config naming the given fake providers (the rig's own
 * and any others) with hourly sweeps and no grace period; `call` is an admin request.
 */
function sweepApi(providers: { name: string; stateDir: string }[]) {
  const config = parseConfig({
    temporal: { taskQueue: rig.worker.taskQueue },
    providers: providers.map(({ name, stateDir }) => ({ type: 'fake', name, stateDir })),
    // Daily: its one run of the day, at midnight, is what `awayFromTheHour` keeps a test clear of.
    sweep: { interval: '24h', gracePeriod: 0 },
  });
  const app = createApp({
    client: rig.client,
    taskQueue: rig.worker.taskQueue,
    config,
    github: { get: () => rig.worker.github },
    secrets: { adminToken: ADMIN_TOKEN, instanceTokenKey: INSTANCE_TOKEN_KEY },
    logger: recordingLogger(),
  });
  const call = (method: string, path: string) => app(new Request(`http://127.0.0.1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
  return { config, call };
}

describe('leaked runners and sweeps', () => {
  it('lists leaked runners with leaked=true and shows the sweep that deleted their machine', async () => {
    const provider = addProvider(rig);
    const idle = uniqueName('unscheduled');
    const { config, call } = sweepApi([provider, { name: idle, stateDir: `/tmp/${idle}` }]);
    const get = async <T>(path: string): Promise<T> => {
      const res = await call('GET', path);
      expect(res.status, path).toBe(200);
      return (await res.json()) as T;
    };

    const leaked = await leakMachine(rig, provider);
    const alive = (await runningInstance(rig, provider.name)).workflowId.slice('runner/'.length);
    const { runners } = await get<{ runners: { name: string; leaked: boolean; running: boolean; closeTime?: string }[] }>('/api/v1/runners?leaked=true');
    // Its clean-up was stopped before the machine went: the sweep is what is left.
    expect(runners.find((r) => r.name === leaked)).toMatchObject({
      leaked: true,
      running: false,
      closeTime: expect.any(String),
      cleanup: { workflowId: cleanupWorkflowId(leaked), status: 'terminated' },
    });
    expect(runners.find((r) => r.name === alive)).toBeUndefined();
    const running = await get<{ runners: { name: string }[] }>(`/api/v1/runners`);
    expect(running.runners.map((r) => r.name)).not.toContain(leaked);

    const scheduleId = sweepScheduleId(provider.name);
    await awayFromTheHour();
    await ensureSweepSchedules(rig.client, config, rig.worker.taskQueue);
    const schedule = rig.client.schedule.getHandle(scheduleId);
    try {
      const report = await triggerSweep(rig.client, schedule);
      expect(report.deleted.map((d) => d.name)).toEqual([leaked]);
      const { sweeps } = await get<{ sweeps: Record<string, unknown>[] }>('/api/v1/sweeps?runs=3');
      expect(sweeps.find((s) => s.provider === idle)).toEqual({ provider: idle, scheduleId: sweepScheduleId(idle), scheduled: true, paused: false, intervalMs: 86_400_000, nextRunAt: expect.any(String), runs: [] });
      const sweep = sweeps.find((s) => s.provider === provider.name);
      expect(sweep).toMatchObject({ scheduleId, scheduled: true, paused: false, intervalMs: 86_400_000 });
      expect(sweep!.runs).toEqual([
        expect.objectContaining({
          workflowId: expect.stringMatching(new RegExp(`^${scheduleId}-`)),
          status: 'completed',
          closedAt: expect.any(String),
          result: {
            listed: 2,
            owned: 1,
            deleted: 1,
            skipped: 0,
            failed: 0,
            deletedNames: [leaked],
            failures: [],
            // No pool of this provider at GitHub: its GitHub side ran and found nothing.
            github: { registrationsRemoved: 0, jobsRequeued: 0, jobsDequeued: 0, jobIds: [] },
          },
        }),
      ]);
    } finally {
      await schedule.delete();
      await rig.client.schedule.getHandle(sweepScheduleId(idle)).delete();
    }
    const missing = await get<{ sweeps: Record<string, unknown>[] }>('/api/v1/sweeps');
    expect(missing.sweeps.find((s) => s.provider === provider.name)).toEqual({ provider: provider.name, scheduleId, scheduled: false, runs: [] });

    await expectError(await call('GET', '/api/v1/sweeps?runs=0'), 400, 'validation_failed');
    await expectError(await call('GET', '/api/v1/liveness?runs=21'), 400, 'validation_failed');
  });

  it('lists a leaked runner while its clean-up retries, and no longer once the clean-up confirmed the machine gone', async () => {
    const provider = addProvider(rig);
    const { call } = sweepApi([provider]);
    const leakedNames = async () => {
      const res = await call('GET', '/api/v1/runners?leaked=true');
      expect(res.status).toBe(200);
      return ((await res.json()) as { runners: { name: string; cleanup: { workflowId: string; status: string } | null }[] }).runners;
    };
    const name = uniqueName('leak-healed');
    const handle = await runningInstance(rig, provider.name, name);
    provider.fake.setFault('delete', { failForever: true, instance: name, message: 'provider credentials expired' });
    await handle.signal(forceDeleteSignal, { reason: 'operator gave up' });
    expect(await handle.result()).toMatchObject({ leaked: true });

    const listed = await eventually(async () => (await leakedNames()).find((r) => r.name === name), 10_000, 'the leaked runner listed');
    expect(listed.cleanup).toEqual({ workflowId: cleanupWorkflowId(name), status: 'running' });

    provider.fake.clearFaults('delete');
    await rig.client.workflow.getHandle(cleanupWorkflowId(name)).result();
    expect(provider.fake.instance(name)).toBeUndefined();
    await eventually(async () => ((await leakedNames()).some((r) => r.name === name) ? undefined : true), 10_000, 'the healed runner gone from the list');
  });

  it('sweeps a provider now through its schedule, paused or not, and says why when it cannot', async () => {
    const provider = addProvider(rig);
    // In the API's config but not on the worker: its sweep runs, and fails.
    const elsewhere = uniqueName('elsewhere');
    const { config, call } = sweepApi([provider, { name: elsewhere, stateDir: `/tmp/${elsewhere}` }]);
    const runsOf = async (of = provider.name) => {
      const { sweeps } = (await (await call('GET', '/api/v1/sweeps?runs=5')).json()) as { sweeps: { provider: string; runs: { status: string; error?: string; result?: { deletedNames: string[] } }[] }[] };
      return sweeps.find((s) => s.provider === of)!.runs;
    };

    const unknown = await expectError(await call('POST', '/api/v1/sweeps/nope'), 404, 'not_found');
    expect(unknown.message).toBe(`provider "nope" is not configured (configured: ${provider.name}, ${elsewhere})`);
    const early = await expectError(await call('POST', `/api/v1/sweeps/${provider.name}`), 409, 'no_schedule');
    expect(early.message).toContain(`there is no sweep schedule sweep/${provider.name} yet`);
    await expectError(await call('POST', '/api/v1/sweeps'), 405);

    const scheduleId = sweepScheduleId(provider.name);
    await awayFromTheHour();
    await ensureSweepSchedules(rig.client, config, rig.worker.taskQueue);
    const schedule = rig.client.schedule.getHandle(scheduleId);
    try {
      const leaked = await leakMachine(rig, provider);
      const now = await call('POST', `/api/v1/sweeps/${provider.name}`);
      expect(now.status).toBe(202);
      expect(await now.json()).toEqual({ provider: provider.name, scheduleId, paused: false });
      const [run] = await eventually(async () => {
        const runs = await runsOf();
        return runs[0]?.status === 'completed' ? runs : undefined;
      }, 20_000, 'the sweep run');
      expect(run!.result?.deletedNames).toEqual([leaked]);

      // The sweep disabled in the config pauses its schedule; sweeping by hand still runs, once.
      await schedule.pause('sweep disabled in the config');
      const paused = await call('POST', `/api/v1/sweeps/${provider.name}`);
      expect(await paused.json()).toEqual({ provider: provider.name, scheduleId, paused: true });
      const runs = await eventually(async () => {
        const all = await runsOf();
        return all.length === 2 && all.every((r) => r.status === 'completed') ? all : undefined;
      }, 20_000, 'the second sweep run');
      expect(runs[0]!.result?.deletedNames).toEqual([]);
      expect((await schedule.describe()).state.paused).toBe(true);

      // A run that fails shows why, not only that an activity failed.
      expect((await call('POST', `/api/v1/sweeps/${elsewhere}`)).status).toBe(202);
      const [failed] = await eventually(async () => {
        const all = await runsOf(elsewhere);
        return all[0]?.status === 'failed' ? all : undefined;
      }, 20_000, 'the failed sweep run');
      expect(failed!.error).toBe(`provider "${elsewhere}" is not configured on this worker (UnknownProvider)`);
    } finally {
      await schedule.delete();
      await rig.client.schedule.getHandle(sweepScheduleId(elsewhere)).delete();
    }
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
