import { describe, expect, it } from 'vitest';
import type { GitHubScope } from '../../github/port';
import { useSimulatedGitHub } from './support/simulated-github';

const repo: GitHubScope = { kind: 'repo', owner: 'octo-org', repo: 'octo-repo' };

const env = useSimulatedGitHub();

async function control(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${env.sim.controlUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
}

describe('simulator control endpoints (/_sim)', () => {
  it('queues jobs, lists them and reports stats over HTTP', async () => {
    const queued = await control('POST', '/jobs', { repository: 'octo-org/app', labels: ['linux'] });
    expect(queued.status).toBe(201);
    expect(queued.json).toMatchObject({ status: 'queued', labels: ['linux'], repository: 'octo-org/app' });
    expect((await control('GET', '/jobs')).json).toHaveLength(1);
    expect((await control('GET', '/stats')).json).toMatchObject({ jobs: { queued: 1, inProgress: 0, completed: 0 }, totalApiCalls: 0 });
  });

  it('rejects an invalid job with the field named', async () => {
    const res = await control('POST', '/jobs', { labels: [] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).toContain('labels');
  });

  it('injects latency per endpoint and clears faults', async () => {
    // Latency long against the bound for an endpoint without it, so a busy machine cannot blur the two.
    expect((await control('POST', '/faults', { kind: 'latency', ms: 1_000, operation: 'list-runners' })).status).toBe(201);
    let started = Date.now();
    await env.github.findRunnerByName(repo, 'x');
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    started = Date.now();
    await env.github.listRunnerDownloads(repo);
    expect(Date.now() - started).toBeLessThan(900);
    expect((await control('DELETE', '/faults')).status).toBe(204);
    started = Date.now();
    await env.github.findRunnerByName(repo, 'x');
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('ends a fault after forMs even with requests left, and names forMs when it is not a positive whole number', async () => {
    expect((await control('POST', '/faults', { kind: 'latency', ms: 1_000, operation: 'list-runners', times: 5, forMs: 300 })).status).toBe(201);
    let started = Date.now();
    await env.github.findRunnerByName(repo, 'x');
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    // Four uses are left, but the fault's 300 ms ended while the first one waited.
    started = Date.now();
    await env.github.findRunnerByName(repo, 'x');
    expect(Date.now() - started).toBeLessThan(900);

    const refused = await control('POST', '/faults', { kind: 'server-error', forMs: 0 });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toContain('forMs');
  });

  it('answers every call about an unreadable repository with 404 as GitHub does, others as usual, and names the repository when it is missing', async () => {
    expect((await control('POST', '/faults', { kind: 'unreadable-repository', repository: 'Octo-Org/Octo-Repo' })).status).toBe(201);
    await expect(env.github.listQueuedRuns(repo)).rejects.toMatchObject({ name: 'GitHubApiError', status: 404 });
    await expect(env.github.findRunnerByName(repo, 'x')).rejects.toMatchObject({ status: 404 });
    await expect(env.github.listQueuedRuns({ kind: 'repo', owner: 'octo-org', repo: 'other' })).resolves.toEqual([]);
    expect((await control('DELETE', '/faults')).status).toBe(204);
    await expect(env.github.listQueuedRuns(repo)).resolves.toEqual([]);

    for (const body of [{ kind: 'unreadable-repository' }, { kind: 'unreadable-repository', repository: 'no-slash' }]) {
      const refused = await control('POST', '/faults', body);
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.json)).toContain('repository');
    }
  });

  it('takes the message type of a foreign scale-set message, and names the field when it is not a string', async () => {
    const set = await control('POST', '/faults', { kind: 'foreign-message', messageType: 'RunnerScaleSetMaintenance', times: 1 });
    expect(set).toMatchObject({ status: 201, json: { kind: 'foreign-message', messageType: 'RunnerScaleSetMaintenance', times: 1 } });
    const bad = await control('POST', '/faults', { kind: 'foreign-message', messageType: 7 });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toContain('messageType');
    expect((await control('DELETE', '/faults')).status).toBe(204);
  });

  it('refuses an agent with a JIT config it never minted', async () => {
    const res = await control('POST', '/agents', { jitConfig: Buffer.from('{}').toString('base64') });
    expect(res.status).toBe(400);
  });

  it('counts API calls per endpoint', async () => {
    await env.github.findRunnerByName(repo, 'a');
    await env.github.findRunnerByName({ kind: 'org', org: 'octo-org' }, 'a');
    await env.github.removeRunner({ scope: repo, name: 'a', runnerId: 77 });
    const stats = (await control('GET', '/stats')).json as { calls: Record<string, number>; totalApiCalls: number };
    expect(stats.calls).toEqual({
      'GET /repos/{owner}/{repo}/actions/runners': 1,
      'GET /orgs/{org}/actions/runners': 1,
      'DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}': 1,
    });
    expect(stats.totalApiCalls).toBe(3);
  });

  it('answers unknown GitHub paths with 404 like GitHub', async () => {
    const res = await fetch(`${env.sim.url}/repos/o/r/actions/secrets`, { headers: { authorization: 'token t' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-github-request-id')).toMatch(/^[0-9A-F:]+$/);
    expect(await res.json()).toMatchObject({ message: 'Not Found' });
  });
});
