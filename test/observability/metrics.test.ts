import { describe, expect, it } from 'vitest';
import { runnerWorkflowId } from '../../workflows/messages';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { runnerInstance } from '../../workflows/runner-instance';
import { SIMULATED_PROVIDER } from '../../devstack/stack';
import { api, e2ePool, useE2EStack } from '../e2e/stack';
import { labelNames, scrape, sampleSum } from '../support/prometheus-text';
import { eventually } from '../support/temporal';

const stack = useE2EStack({ jobDurationMs: 300 });

/** Every runnerflow metric and the labels it may carry: bounded sets only. */
const EXPECTED_LABELS: Record<string, string[]> = {
  runnerflow_runners: ['pool', 'provider', 'status'],
  runnerflow_runner_agents: ['pool', 'provider', 'status'],
  runnerflow_jobs_queued: ['pool'],
  runnerflow_job_queue_seconds: ['pool'],
  runnerflow_runner_create_seconds: ['pool', 'provider', 'status'],
  runnerflow_runner_bootstrap_seconds: ['pool', 'provider'],
  runnerflow_runner_delete_seconds: ['pool', 'provider', 'status'],
  runnerflow_runner_forced_deletes_total: ['pool', 'provider'],
  runnerflow_runner_leaked_total: ['pool', 'provider'],
  runnerflow_sweep_runs_total: ['provider', 'status'],
  runnerflow_sweep_machines_total: ['provider', 'status'],
  runnerflow_sweep_last_run_timestamp_seconds: ['provider'],
  runnerflow_sweep_lost_webhook_jobs_total: ['provider', 'webhook'],
  runnerflow_sweep_deleted_total: ['provider', 'reason'],
  runnerflow_provider_operation_seconds: ['provider', 'operation', 'outcome'],
  runnerflow_webhook_deliveries_total: ['event', 'result'],
  runnerflow_webhook_previous_secret_deliveries_total: [],
  runnerflow_github_requests_total: ['operation', 'outcome'],
  runnerflow_github_rate_limit_remaining: ['credentials', 'resource'],
  runnerflow_webhook_redeliveries_total: ['credentials', 'outcome'],
  runnerflow_webhook_redelivery_last_run_timestamp_seconds: ['credentials'],
  runnerflow_liveness_findings_total: ['provider', 'check', 'finding'],
  runnerflow_liveness_last_run_timestamp_seconds: ['provider', 'check'],
};

describe('GET /metrics', () => {
  it('shows runners, queued jobs, queue time and lifecycle durations by pool, never by runner or job', async () => {
    const pool = e2ePool('metrics', { minIdleRunners: 1 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const job = stack.sim.queueJob({ repository: 'acme/metrics', labels: ['self-hosted', 'linux', 'metrics'] });
    const done = await eventually(() => {
      const j = stack.sim.jobs().find((x) => x.id === job.id);
      return j?.status === 'completed' ? j : undefined;
    }, 45_000, 'job completed');

    const poolHandle = stack.client.workflow.getHandle(poolWorkflowId(pool.name));
    const idle = await eventually(async () => (await poolHandle.query(poolStateQuery)).runners.find((r) => r.runnerStatus === 'idle'), 30_000, 'an idle runner');
    const url = `${stack.api.url}/metrics`;
    const whileIdle = await eventually(async () => {
      const families = await scrape(url);
      return sampleSum(families.get('runnerflow_runner_agents'), { pool: pool.name, status: 'idle' }) >= 1 ? families : undefined;
    }, 15_000, 'the idle runner in runnerflow_runner_agents');
    expect(sampleSum(whileIdle.get('runnerflow_runners'), { pool: pool.name, provider: SIMULATED_PROVIDER, status: 'running' })).toBeGreaterThanOrEqual(1);
    expect(whileIdle.get('runnerflow_jobs_queued')?.samples.some((s) => s.labels.pool === pool.name)).toBe(true);

    expect((await api(stack, 'DELETE', `/api/v1/runners/${idle.name}?force=true`)).status).toBe(202);
    await stack.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(idle.name)).result();

    const families = await scrape(url);
    const of = { pool: pool.name, provider: SIMULATED_PROVIDER };
    expect(sampleSum(families.get('runnerflow_job_queue_seconds'), { pool: pool.name })).toBeGreaterThanOrEqual(1);
    expect(sampleSum(families.get('runnerflow_runner_create_seconds'), { ...of, status: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(sampleSum(families.get('runnerflow_runner_bootstrap_seconds'), of)).toBeGreaterThanOrEqual(2);
    expect(sampleSum(families.get('runnerflow_runner_delete_seconds'), { ...of, status: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sampleSum(families.get('runnerflow_runner_forced_deletes_total'), of)).toBe(1);
    expect(sampleSum(families.get('runnerflow_runner_leaked_total'), of)).toBe(0);
    expect(families.get('runnerflow_job_queue_seconds')?.type).toBe('HISTOGRAM');

    for (const [name, allowed] of Object.entries(EXPECTED_LABELS)) {
      const family = families.get(name);
      expect(family, `${name} is exposed`).toBeDefined();
      for (const label of labelNames(family!)) expect(allowed, `${name} label ${label}`).toContain(label);
    }
    // No label anywhere carries a runner name or a job id.
    const runnerNames = new Set([idle.name, done.runnerName!]);
    for (const family of families.values()) {
      for (const sample of family.samples) {
        for (const value of Object.values(sample.labels)) {
          expect(runnerNames.has(value), `${family.name} carries runner name ${value}`).toBe(false);
          expect(value === String(job.id), `${family.name} carries job id ${value}`).toBe(false);
        }
      }
    }
    await api(stack, 'DELETE', `/api/v1/pools/${pool.name}`);
  });
});
