/**
 * Runner routes against real instance workflows run by a worker with the fake
 * provider and a GitHub double shared with the API.
 */
import { describe, expect, it } from 'vitest';
import { GitHubApiError } from '../../github/port';
import { instanceStartOptions } from '../../workflows/instance-options';
import { runnerWorkflowId, type InstanceState } from '../../workflows/messages';
import { eventually, instanceInput, uniqueName } from '../support/temporal';
import { expectError, useWorkerAndApi, validPool } from './support';

const env = useWorkerAndApi();

async function getJson<T>(path: string): Promise<T> {
  const response = await env.api.call('GET', path);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as T;
}

async function runningRunner(pool = uniqueName('pool')): Promise<string> {
  const name = uniqueName('runner');
  await env.client.workflow.start('runnerInstance', { taskQueue: env.worker.taskQueue, ...instanceStartOptions(instanceInput(name, { pool })) });
  await eventually(async () => (await getJson<InstanceState>(`/api/v1/runners/${name}`)).status === 'running', 20_000, `${name} running`);
  return name;
}

async function ended(name: string): Promise<boolean> {
  const description = await env.client.workflow.getHandle(runnerWorkflowId(name)).describe();
  return description.status.name !== 'RUNNING';
}

describe('GET /api/v1/runners/:name', () => {
  it('answers the state query', async () => {
    const name = await runningRunner();
    const state = await getJson<InstanceState>(`/api/v1/runners/${name}`);
    expect(state).toMatchObject({ name, pool: expect.any(String), provider: 'fake', status: 'running', forced: false, leaked: false });
    expect(state.transitions.map((t) => t.to)).toContain('running');
  });

  it('answers 404 for an unknown runner', async () => {
    await expectError(await env.api.call('GET', `/api/v1/runners/${uniqueName('nobody')}`), 404, 'not_found');
  });
});

describe('GET /api/v1/runners', () => {
  it('filters by pool and status through the search attributes', async () => {
    const pool = uniqueName('pool');
    const a = await runningRunner(pool);
    const b = await runningRunner(pool);
    await runningRunner();
    const listed = await eventually(async () => {
      const { runners } = await getJson<{ runners: { name: string; status: string }[] }>(`/api/v1/runners?pool=${pool}&status=running`);
      return runners.length === 2 ? runners : undefined;
    }, 20_000, 'two running runners of the pool');
    expect(listed.map((r) => r.name).sort()).toEqual([a, b].sort());
    expect(listed[0]).toMatchObject({ pool, provider: 'fake', status: 'running', leaked: false, running: true });
    const { runners: none } = await getJson<{ runners: unknown[] }>(`/api/v1/runners?pool=${pool}&status=error`);
    expect(none).toEqual([]);
  });
});

describe('DELETE /api/v1/runners/:name', () => {
  it('deletes gracefully with 202', async () => {
    const name = await runningRunner();
    const response = await env.api.call('DELETE', `/api/v1/runners/${name}`);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ runner: name, action: 'delete' });
    await eventually(() => ended(name), 20_000, `${name} deleted`);
    expect((await getJson<InstanceState>(`/api/v1/runners/${name}`)).status).toBe('deleted');
  });

  it('refuses to force-delete a runner busy on GitHub with 409 telling to cancel the job', async () => {
    const name = await runningRunner();
    env.worker.github.busy.add(name);
    const error = await expectError(await env.api.call('DELETE', `/api/v1/runners/${name}?force=true`), 409, 'runner_busy');
    expect(error.message).toMatch(/cancel the job/);
    const state = await getJson<InstanceState>(`/api/v1/runners/${name}`);
    expect(state).toMatchObject({ status: 'running', forced: false });
    expect(await ended(name)).toBe(false);
  });

  it('force-deletes a busy runner when told to bypass', async () => {
    const name = await runningRunner();
    env.worker.github.busy.add(name);
    const response = await env.api.call('DELETE', `/api/v1/runners/${name}?force=true&bypassBusy=true`);
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ runner: name, action: 'forceDelete', github: 'bypassed', warning: expect.stringContaining('running a job') });
    await eventually(() => ended(name), 20_000, `${name} gone`);
    expect((await getJson<InstanceState>(`/api/v1/runners/${name}`)).forced).toBe(true);
  });

  it('force-deletes an idle runner: removed from GitHub, then gone', async () => {
    const name = await runningRunner();
    expect(env.worker.github.runners.has(name)).toBe(true);
    const response = await env.api.call('DELETE', `/api/v1/runners/${name}?force=true`);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ runner: name, action: 'forceDelete', github: 'removed' });
    expect(env.worker.github.runners.has(name)).toBe(false);
    await eventually(() => ended(name), 20_000, `${name} gone`);
    const state = await getJson<InstanceState>(`/api/v1/runners/${name}`);
    expect(state).toMatchObject({ status: 'deleted', forced: true });
    await expectError(await env.api.call('DELETE', `/api/v1/runners/${name}?force=true`), 404, 'not_found');
  });

  it('answers 502 with the reason when GitHub fails, and keeps the runner', async () => {
    const name = await runningRunner();
    env.worker.github.setFault('remove', { failTimes: 1, error: () => new GitHubApiError('GitHub answered 500 on DELETE', 500, true) });
    const error = await expectError(await env.api.call('DELETE', `/api/v1/runners/${name}?force=true`), 502, 'github_error');
    expect(error.message).toContain('GitHub answered 500');
    expect(await ended(name)).toBe(false);
  });

  it('answers 404 for an unknown runner', async () => {
    await expectError(await env.api.call('DELETE', `/api/v1/runners/${uniqueName('nobody')}`), 404, 'not_found');
  });
});

describe('pool reads answered by the workflow', () => {
  it('GET /api/v1/pools/:name answers the pool state', async () => {
    const name = uniqueName('pool').toLowerCase().slice(0, 60);
    const created = await env.api.call('POST', '/api/v1/pools', { body: validPool(name, { maxRunners: 2 }) });
    expect(created.status).toBe(201);
    const pool = await getJson<{ name: string; settings: { name: string; maxRunners: number }; runners: unknown[]; deleting: boolean }>(`/api/v1/pools/${name}`);
    expect(pool).toMatchObject({ name, settings: { name, maxRunners: 2 }, runners: [], deleting: false });
    expect((await env.api.call('DELETE', `/api/v1/pools/${name}`)).status).toBe(202);
  });
});
