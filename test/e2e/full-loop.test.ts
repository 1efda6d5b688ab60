import { describe, expect, it } from 'vitest';
import { mintInstanceToken } from '../../api/instance-token';
import { sampleInstanceSpec } from '../../devstack/fixtures';
import { SIMULATED_PROVIDER } from '../../devstack/stack';
import { resolveTimings } from '../../domain/timings';
import { instanceStartOptions } from '../../workflows/instance-options';
import { forceDeleteSignal, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { runnerInstance } from '../../workflows/runner-instance';
import { eventually, uniqueName } from '../support/temporal';
import { api, e2ePool, useE2EStack } from './stack';

const stack = useE2EStack({ jobDurationMs: 300 });

describe('the whole loop: GitHub job → webhook → pool → runner → job → gone', () => {
  it('runs a queued job on a fresh ephemeral runner and cleans everything up', async () => {
    const pool = e2ePool('loop');
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const before = stack.sim.stats().callsByOperation;

    const job = stack.sim.queueJob({ repository: 'acme/loop', labels: ['self-hosted', 'linux', 'loop'] });
    const done = await eventually(() => {
      const j = stack.sim.jobs().find((x) => x.id === job.id);
      return j?.status === 'completed' ? j : undefined;
    }, 45_000, 'job completed in GitHub');
    expect(done.conclusion).toBe('success');
    expect(done.runnerName).toMatch(new RegExp(`^${pool.name}-`));

    const runner = stack.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(done.runnerName!));
    const final = await runner.result();
    expect(final).toMatchObject({ status: 'deleted', runnerStatus: 'terminated', jobId: job.id, forced: false, leaked: false });
    expect(final.transitions.map((t) => t.to)).toEqual(['creating', 'running', 'pending_delete', 'deleting', 'deleted']);
    expect(stack.machines.instances().filter((m) => m.poolId === pool.name)).toEqual([]);
    expect(stack.sim.runners().filter((r) => String(r.name).startsWith(pool.name))).toEqual([]);

    // About one GitHub call per ephemeral job: the JIT config (runner downloads are cached per scope).
    const after = stack.sim.stats().callsByOperation;
    const delta = (op: keyof typeof after) => (after[op] ?? 0) - (before[op] ?? 0);
    expect(delta('generate-jitconfig')).toBe(1);
    expect(delta('delete-runner')).toBe(0);
    expect(delta('list-runners')).toBe(0);
    expect(delta('runner-downloads')).toBeLessThanOrEqual(1);

    const view = await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery);
    expect(view.queuedJobs).toEqual([]);
    expect(view.runners).toEqual([]);
  });

  it('waits out a primary rate limit without calling GitHub before the reset, then completes', async () => {
    const pool = e2ePool('limited');
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    stack.sim.setFault({ kind: 'primary-rate-limit', operation: 'generate-jitconfig', resetInMs: 3_000 });
    const limitedBefore = stack.sim.stats().callsDuringPrimaryRateLimit;
    const started = Date.now();
    const job = stack.sim.queueJob({ repository: 'acme/limited', labels: ['self-hosted', 'linux', 'limited'] });
    const done = await eventually(() => {
      const j = stack.sim.jobs().find((x) => x.id === job.id);
      return j?.status === 'completed' ? j : undefined;
    }, 45_000, 'job completed after the reset');
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    // The call that met the limit is the only one made while it lasted.
    expect(stack.sim.stats().callsDuringPrimaryRateLimit - limitedBefore).toBeLessThanOrEqual(1);
    const final = await stack.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(done.runnerName!)).result();
    expect(final.status).toBe('deleted');
    stack.sim.clearFaults();
  });

  it('asks GitHub once when deleting a busy runner, and deletes it after its job', async () => {
    const pool = e2ePool('busy');
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const job = stack.sim.queueJob({ repository: 'acme/busy', labels: ['self-hosted', 'linux', 'busy'], durationMs: 4_000 });
    const running = await eventually(() => {
      const j = stack.sim.jobs().find((x) => x.id === job.id);
      return j?.status === 'in_progress' ? j : undefined;
    }, 30_000, 'job in progress');
    const deletesBefore = stack.sim.stats().callsByOperation['delete-runner'] ?? 0;
    const res = await api(stack, 'DELETE', `/api/v1/runners/${running.runnerName}`);
    expect(res.status).toBe(202);
    const runner = stack.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(running.runnerName!));
    const final = await runner.result();
    expect(final.status).toBe('deleted');
    expect(stack.sim.jobs().find((x) => x.id === job.id)?.status).toBe('completed');
    expect(stack.sim.jobs().find((x) => x.id === job.id)?.conclusion).toBe('success');
    // One 422 answer, then no more GitHub calls: the ephemeral runner left GitHub by itself.
    expect((stack.sim.stats().callsByOperation['delete-runner'] ?? 0) - deletesBefore).toBe(1);
  });

  it('records a job no pool can take, visible through the API', async () => {
    const job = stack.sim.queueJob({ repository: 'acme/nowhere', labels: ['self-hosted', 'gpu', 'no-such-pool-label'] });
    const recorded = await eventually(async () => {
      const res = await api(stack, 'GET', '/api/v1/jobs/unmatched');
      return (res.body as { jobs: { jobId: number; reason: string }[] }).jobs.find((j) => j.jobId === job.id);
    }, 20_000, 'unmatched job listed');
    expect(recorded.reason).toMatch(/label|pool/i);
    expect(stack.sim.jobs().find((j) => j.id === job.id)?.status).toBe('queued');
  });

  it("keeps the instance's JIT config sealed in history, and serves its files only until the runner registered", async () => {
    const name = uniqueName('jit-files');
    const input = { name, pool: 'direct', provider: SIMULATED_PROVIDER, spec: sampleInstanceSpec({ bootstrapTimeoutMs: 20_000 }), timings: resolveTimings(stack.loaded.config.timings) };
    const handle = await stack.client.workflow.start(runnerInstance, { taskQueue: stack.loaded.config.temporal.taskQueue, ...instanceStartOptions(input) });
    await eventually(async () => (await handle.query(stateQuery)).status === 'running', 20_000, 'running');
    const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'direct' }, stack.loaded.env.RUNNERFLOW_INSTANCE_TOKEN_SECRET!, 60_000);
    const get = (file: string, bearer = token) => fetch(`${stack.api.url}/api/v1/metadata/credentials/${file}`, { headers: { authorization: `Bearer ${bearer}` } });

    // The simulated machine's runner comes online at once: from then on a job on it could use
    // the token, so the files are no longer handed out (serving them is in test/api/metadata.test.ts).
    await eventually(async () => (await handle.query(stateQuery)).runnerStatus === 'idle', 20_000, 'registered');
    for (const file of ['runner', 'credentials', 'credentials_rsaparams']) {
      const refused = await get(file);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ error: { code: 'instance_registered' } });
    }
    expect((await get('bogus')).status).toBe(404);
    expect((await get('runner', 'not-a-token')).status).toBe(401);

    const history = JSON.stringify(await handle.fetchHistory());
    expect(history).not.toContain('"AgentName"');
    expect(history).not.toContain('credentials_rsaparams');
    await handle.signal(forceDeleteSignal, { reason: 'test done' });
    await handle.result();
    expect((await get('runner')).status).toBe(403);
  });
});
