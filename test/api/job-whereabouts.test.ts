/**
 * `GET /api/v1/jobs/:id` and `runnerflow jobs show`: where a job is and what it waits for, read
 * from the pools and the unmatched record on the real server, with the GitHub simulator's jobs.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually, uniqueName } from '../support/temporal';
import { api, e2ePool, useE2EStack, type E2EStack } from '../e2e/stack';

// Long enough for a job to be seen running, and the next one waiting behind it.
const stack = useE2EStack({ jobDurationMs: 8_000 });

function jobsShow(s: E2EStack, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return jobsCli(s, 'show', ...args);
}

function jobsCli(s: E2EStack, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) =>
    execFile(
      process.execPath,
      [resolve(import.meta.dirname, '../../bin/runnerflow.js'), 'jobs', ...args],
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

describe('where a job would go', () => {
  it('names the matching pools of the top priority, or why none would take the job', async () => {
    const tag = uniqueName('route').toLowerCase();
    const low = e2ePool(`${tag}-a`, { labels: ['self-hosted', 'linux', tag, 'twin'], priority: 1 });
    const twin = e2ePool(`${tag}-b`, { labels: ['self-hosted', 'linux', tag, 'twin'], priority: 1, github: { credentials: 'default', scope: { kind: 'org', org: 'acme' } } });
    const high = e2ePool(`${tag}-c`, { labels: ['self-hosted', 'linux', tag, 'gpu'], priority: 5 });
    const off = e2ePool(`${tag}-d`, { labels: ['self-hosted', `${tag}-off`], enabled: false });
    for (const pool of [low, twin, high, off]) expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const route = async (query: string) => {
      const { status, body } = await api(stack, 'GET', `/api/v1/jobs/route?${query}`);
      expect(status, JSON.stringify(body)).toBe(200);
      return body as { pools: string[]; priority?: number; reason?: string };
    };
    // Visibility lists new pools with their memo within seconds.
    await eventually(async () => ((await route(`labels=${tag}-off`)).reason?.includes('disabled') ? true : undefined), 30_000, 'the new pools to be listed');
    await eventually(async () => ((await route(`labels=${tag},twin`)).pools.length === 2 ? true : undefined), 30_000, 'both twins to be listed');

    const twins = await route(`labels=${tag},twin`);
    expect({ ...twins, pools: [...twins.pools].sort() }).toEqual({ labels: [tag, 'twin'], pools: [low.name, twin.name].sort(), priority: 1 });
    expect((await route(`labels=${tag},gpu`)).pools).toEqual([high.name]);
    // Every pool has these: the highest priority takes the job.
    expect(await route(`labels=linux,${tag}`)).toEqual({ labels: ['linux', tag], pools: [high.name], priority: 5 });
    // A repository that only the organisation's pool serves.
    expect((await route(`labels=${tag},twin&repository=acme/elsewhere`)).pools).toEqual([twin.name]);
    expect((await route(`labels=${tag}-off`)).reason).toBe(`the pools with the labels ${tag}-off are disabled: ${off.name}`);
    expect((await route(`labels=${tag},windows`)).reason).toBe(`no pool has the labels ${tag}, windows`);

    for (const [query, message] of [
      ['', 'query.labels'],
      ['labels=,', "give the labels of the job's runs-on"],
      [`labels=${tag}&repository=acme`, 'query.repository: must be owner/name'],
    ] as const) {
      const { status, body } = await api(stack, 'GET', `/api/v1/jobs/route?${query}`);
      expect(status, query).toBe(400);
      expect(JSON.stringify(body), query).toContain(message);
    }

    const cli = await jobsCli(stack, 'route', '--labels', `${tag},gpu`);
    expect(cli.stdout.trim()).toBe(`pool ${high.name} (priority 5)`);
    expect((await jobsCli(stack, 'route', '--labels', `${tag},twin`)).stdout).toContain('the one with the most free capacity when the job arrives');
    expect((await jobsCli(stack, 'route', '--labels', `${tag},windows`)).stdout.trim()).toBe(`no pool would take it: no pool has the labels ${tag}, windows`);
    const usage = await jobsCli(stack, 'route');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('jobs route needs --labels');
  });
});
