/**
 * `GET /api/v1/jobs/:id` and `runnerflow jobs show`: where a job is and what it waits for, read
 * from the pools and the unmatched record on the real server, with the GitHub simulator's jobs.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/temporal';
import { api, e2ePool, useE2EStack, type E2EStack } from '../e2e/stack';

// Long enough for a job to be seen running, and the next one waiting behind it.
const stack = useE2EStack({ jobDurationMs: 8_000 });

function jobsShow(s: E2EStack, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) =>
    execFile(
      process.execPath,
      [resolve(import.meta.dirname, '../../bin/runnerflow.js'), 'jobs', 'show', ...args],
      { env: { PATH: process.env.PATH ?? '', RUNNERFLOW_URL: s.api.url, RUNNERFLOW_ADMIN_TOKEN: s.adminToken }, timeout: 30_000 },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

interface Whereabouts {
  state: string;
  pool?: string;
  runner?: { name: string; runnerStatus: string };
  waitingFor?: string[];
  ahead?: number;
  repository?: string;
  reason?: string;
}

describe('where a job is', () => {
  it('shows a job running on its runner, and the one behind it queued in a pool at its maximum', async () => {
    const repo = 'whereabouts';
    const pool = e2ePool(repo, { maxRunners: 1 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const first = stack.sim.queueJob({ repository: `acme/${repo}`, labels: pool.labels });
    const running = await eventually(async () => {
      const { status, body } = await api(stack, 'GET', `/api/v1/jobs/${first.id}`);
      return status === 200 && (body as Whereabouts).state === 'running' ? (body as Whereabouts) : undefined;
    }, 30_000, 'the first job to run');
    expect(running.pool).toBe(pool.name);
    expect(running.runner?.runnerStatus).toBe('active');

    const second = stack.sim.queueJob({ repository: `acme/${repo}`, labels: pool.labels });
    const queued = await eventually(async () => {
      const { status, body } = await api(stack, 'GET', `/api/v1/jobs/${second.id}`);
      return status === 200 ? (body as Whereabouts) : undefined;
    }, 30_000, 'the second job to reach its pool');
    expect(queued).toMatchObject({ state: 'queued', pool: pool.name, repository: `acme/${repo}`, ahead: 0 });
    expect(queued.waitingFor?.[0]).toBe(`pool ${pool.name} is at its maximum: 1 of 1 machines (1 busy, 0 leaving); a runner is made once one goes, or raise maxRunners`);

    const shown = await jobsShow(stack, String(second.id));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('State:');
    expect(shown.stdout).toContain(`Pool:        ${pool.name}`);
    expect(shown.stdout).toContain(`Waiting for:\n  - pool ${pool.name} is at its maximum`);
    const json = JSON.parse((await jobsShow(stack, String(second.id), '--json')).stdout) as Whereabouts;
    expect(json.state).toBe('queued');
    // Both run in the end, one after the other.
    await eventually(() => stack.sim.jobs().find((j) => j.id === second.id && j.status !== 'queued'), 60_000, 'the second job to start');
  });

  it('shows why no pool took a job, and that a disabled pool has the labels', async () => {
    const repo = 'whereabouts-disabled';
    const pool = e2ePool(repo, { enabled: false });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const job = stack.sim.queueJob({ repository: `acme/${repo}`, labels: pool.labels });
    const found = await eventually(async () => {
      const { status, body } = await api(stack, 'GET', `/api/v1/jobs/${job.id}`);
      return status === 200 ? (body as Whereabouts) : undefined;
    }, 30_000, 'the job to be recorded as unmatched');
    expect(found).toMatchObject({ state: 'unmatched', repository: `acme/${repo}` });
    expect(found.reason).toContain(`are disabled: ${pool.name}`);
    const shown = await jobsShow(stack, String(job.id));
    expect(shown.stdout).toContain('unmatched: no pool took it');
    expect(shown.stdout).toContain(`are disabled: ${pool.name}`);
  });

  it('answers a job nobody knows with 404 and what may have happened, and a bad id with 400', async () => {
    const unknown = await api(stack, 'GET', '/api/v1/jobs/77777777777');
    expect(unknown.status).toBe(404);
    expect(JSON.stringify(unknown.body)).toContain("its queued webhook has not reached runnerflow");
    for (const bad of ['abc', '0', '-3', '1.5', '12345678901234567']) {
      const { status, body } = await api(stack, 'GET', `/api/v1/jobs/${bad}`);
      expect(status, bad).toBe(400);
      expect((body as { error: { code: string; message: string } }).error.message).toContain(`got "${bad}"`);
    }
    const shown = await jobsShow(stack, '77777777777');
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain('no pool counts job 77777777777');
  });
});
