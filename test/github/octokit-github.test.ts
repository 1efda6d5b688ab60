import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OctokitGitHub } from '../../github/octokit-github';
import { GitHubApiError, type GitHubScope } from '../../github/port';
import { decodeJitConfig } from '../../github/simulator/jit-config';
import { registry } from '../../observability/metrics';
import { useSimulatedGitHub } from './support/simulated-github';

const repo: GitHubScope = { kind: 'repo', owner: 'octo-org', repo: 'octo-repo' };
const scopes: GitHubScope[] = [repo, { kind: 'org', org: 'octo-org' }, { kind: 'enterprise', enterprise: 'octo-ent' }];
const jitRequest = (name: string, scope: GitHubScope = repo) => ({ scope, name, labels: ['linux', 'gpu'], runnerGroupId: 1, workFolder: '_work', jit: true });

const env = useSimulatedGitHub();

async function metricValue(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return metric?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))?.value;
}

describe('OctokitGitHub against the simulator', () => {
  it.each(scopes.map((s) => [s.kind, s] as const))('mints a JIT config for %s scope', async (_kind, scope) => {
    const credential = await env.github.createRunnerCredential(jitRequest('pool-a-1', scope));
    expect(credential.kind).toBe('jit');
    if (credential.kind !== 'jit') return;
    expect(decodeJitConfig(credential.encodedJitConfig)).toMatchObject({ runnerId: credential.runnerId, runnerName: 'pool-a-1' });
    const runner = await env.github.findRunnerByName(scope, 'pool-a-1');
    expect(runner).toMatchObject({ id: credential.runnerId, name: 'pool-a-1', status: 'offline', busy: false });
    expect(runner?.labels).toEqual(['self-hosted', 'linux', 'gpu']);
  });

  it('gets a registration token when not JIT', async () => {
    const credential = await env.github.createRunnerCredential({ ...jitRequest('static-1'), jit: false });
    expect(credential.kind).toBe('registration-token');
    if (credential.kind !== 'registration-token') return;
    expect(credential.token).toMatch(/^[A-Z0-9]{29}$/);
    expect(Date.parse(credential.expiresAt)).toBeGreaterThan(Date.now());
    expect(env.sim.stats().callsByOperation['registration-token']).toBe(1);
  });

  it('removes a runner by id (204), then reports it not found (404)', async () => {
    const credential = await env.github.createRunnerCredential(jitRequest('pool-a-2'));
    if (credential.kind !== 'jit') throw new Error('expected a JIT credential');
    expect(await env.github.removeRunner({ scope: repo, name: 'pool-a-2', runnerId: credential.runnerId })).toBe('removed');
    expect(await env.github.removeRunner({ scope: repo, name: 'pool-a-2', runnerId: credential.runnerId })).toBe('not_found');
    expect(await env.github.findRunnerByName(repo, 'pool-a-2')).toBeUndefined();
  });

  it('warns about none of the answers the port expects (404 gone, 422 busy, 409 name taken), nor about a failure it hands back', async () => {
    const lines: { level: string; message: string }[] = [];
    const logger = { debug: (message: string) => lines.push({ level: 'debug', message }), info: (message: string) => lines.push({ level: 'info', message }), warn: (message: string) => lines.push({ level: 'warn', message }) };
    const github = new OctokitGitHub({ credentialsName: 'sim', apiUrl: env.sim.url, auth: { type: 'pat', token: 'ghp_simulated' }, logger });
    const first = await github.createRunnerCredential(jitRequest('pool-a-9'));
    if (first.kind !== 'jit') throw new Error('expected a JIT credential');
    await env.sim.startAgent({ jitConfig: first.encodedJitConfig });
    env.sim.queueJob({ labels: ['self-hosted', 'gpu'], durationMs: 60_000 });
    expect(await github.findRunnerByName(repo, 'pool-a-9')).toMatchObject({ busy: true });
    expect(await github.removeRunner({ scope: repo, name: 'pool-a-9', runnerId: first.runnerId })).toBe('busy');
    expect(await github.removeRunner({ scope: repo, name: 'pool-a-9', runnerId: first.runnerId + 1_000 })).toBe('not_found');
    expect(await github.createRunnerCredential(jitRequest('pool-a-10'))).toMatchObject({ kind: 'jit' });
    expect(await github.createRunnerCredential(jitRequest('pool-a-10'))).toMatchObject({ kind: 'jit' });
    env.sim.setFault({ kind: 'server-error', status: 502, times: 1, operation: 'list-runners' });
    await expect(github.findRunnerByName(repo, 'pool-a-10')).rejects.toBeInstanceOf(GitHubApiError);

    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    // Still there for whoever turns debug on.
    expect(lines.map((l) => l.message)).toEqual(expect.arrayContaining([expect.stringMatching(/ - 404 with id /), expect.stringMatching(/ - 409 with id /), expect.stringMatching(/ - 422 with id /), expect.stringMatching(/ - 502 with id /)]));
  });

  it('looks a runner up by name when its id is unknown, and never deletes what it cannot find', async () => {
    await env.github.createRunnerCredential(jitRequest('pool-a-3'));
    expect(await env.github.removeRunner({ scope: repo, name: 'pool-a-3' })).toBe('removed');
    expect(await env.github.removeRunner({ scope: repo, name: 'pool-a-3' })).toBe('not_found');
    const calls = env.sim.stats().callsByOperation;
    expect(calls['list-runners']).toBe(2);
    expect(calls['delete-runner']).toBe(1);
  });

  it('reports a runner running a job as busy (422)', async () => {
    const credential = await env.github.createRunnerCredential(jitRequest('pool-a-4'));
    if (credential.kind !== 'jit') throw new Error('expected a JIT credential');
    await env.sim.startAgent({ jitConfig: credential.encodedJitConfig });
    env.sim.queueJob({ labels: ['self-hosted', 'gpu'], durationMs: 60_000 });
    expect(await env.github.findRunnerByName(repo, 'pool-a-4')).toMatchObject({ busy: true, status: 'online' });
    expect(await env.github.removeRunner({ scope: repo, name: 'pool-a-4', runnerId: credential.runnerId })).toBe('busy');
    expect(env.sim.runners()).toHaveLength(1);
  });

  it('makes a retried JIT mint idempotent: 409 → remove the leftover → mint again', async () => {
    const first = await env.github.createRunnerCredential(jitRequest('pool-a-5'));
    const second = await env.github.createRunnerCredential(jitRequest('pool-a-5'));
    if (first.kind !== 'jit' || second.kind !== 'jit') throw new Error('expected JIT credentials');
    expect(second.runnerId).not.toBe(first.runnerId);
    expect(env.sim.runners().map((r) => r.id)).toEqual([second.runnerId]);
    const calls = env.sim.stats().callsByOperation;
    expect(calls).toMatchObject({ 'generate-jitconfig': 3, 'list-runners': 1, 'delete-runner': 1 });
  });

  it('refuses to replace a same-named runner that is online: an agent holds its registration', async () => {
    const first = await env.github.createRunnerCredential(jitRequest('pool-a-11'));
    if (first.kind !== 'jit') throw new Error('expected a JIT credential');
    await env.sim.startAgent({ jitConfig: first.encodedJitConfig });
    const again = env.github.createRunnerCredential(jitRequest('pool-a-11'));
    await expect(again).rejects.toBeInstanceOf(GitHubApiError);
    await expect(again).rejects.toMatchObject({ status: 409, retryable: true, message: expect.stringMatching(/pool-a-11 is online/) });
    expect(env.sim.runners().filter((r) => r.name === 'pool-a-11').map((r) => r.id)).toEqual([first.runnerId]);
  });

  it('leaves a same-named runner alone when the attempt asking was given up on: it may be its successor\'s', async () => {
    const first = await env.github.createRunnerCredential(jitRequest('pool-a-12'));
    if (first.kind !== 'jit') throw new Error('expected a JIT credential');
    const gaveUp = new AbortController();
    gaveUp.abort(new Error('attempt cut off'));
    await expect(env.github.createRunnerCredential({ ...jitRequest('pool-a-12'), signal: gaveUp.signal })).rejects.toThrow('attempt cut off');
    expect(env.sim.runners().filter((r) => r.name === 'pool-a-12').map((r) => r.id)).toEqual([first.runnerId]);
  });

  it('refuses to replace a same-named runner that is running a job', async () => {
    const first = await env.github.createRunnerCredential(jitRequest('pool-a-6'));
    if (first.kind !== 'jit') throw new Error('expected a JIT credential');
    await env.sim.startAgent({ jitConfig: first.encodedJitConfig });
    env.sim.queueJob({ labels: ['gpu'], durationMs: 60_000 });
    const error = await env.github.createRunnerCredential(jitRequest('pool-a-6')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubApiError);
    expect(error).toMatchObject({ status: 409, retryable: false });
    expect((error as Error).message).toContain('pool-a-6');
  });

  it('lists runner downloads', async () => {
    const tools = await env.github.listRunnerDownloads({ kind: 'org', org: 'octo-org' });
    expect(tools.length).toBeGreaterThan(3);
    expect(tools.find((t) => t.os === 'linux' && t.architecture === 'x64')).toMatchObject({ filename: expect.stringMatching(/linux-x64.*\.tar\.gz$/) as unknown });
  });

  it('works under a GitHub Enterprise Server style /api/v3 base', async () => {
    const ghes = new OctokitGitHub({ credentialsName: 'ghes', apiUrl: `${env.sim.url}/api/v3`, auth: { type: 'pat', token: 't' } });
    expect((await ghes.createRunnerCredential(jitRequest('ghes-1'))).kind).toBe('jit');
    expect(env.sim.stats().calls['POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig']).toBe(1);
  });

  it('types 5xx answers as retryable', async () => {
    env.sim.setFault({ kind: 'server-error', status: 502, times: 1, operation: 'generate-jitconfig' });
    const error = await env.github.createRunnerCredential(jitRequest('pool-a-7')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubApiError);
    expect(error).toMatchObject({ status: 502, retryable: true });
    expect(env.sim.stats().callsByOperation['generate-jitconfig']).toBe(1);
    expect((await env.github.createRunnerCredential(jitRequest('pool-a-7'))).kind).toBe('jit');
  });

  it('types an unreachable GitHub as retryable', async () => {
    const gone = new OctokitGitHub({ credentialsName: 'gone', apiUrl: 'http://127.0.0.1:9', auth: { type: 'pat', token: 't' }, requestTimeoutMs: 2_000 });
    const error = await gone.findRunnerByName(repo, 'x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubApiError);
    expect(error).toMatchObject({ status: undefined, retryable: true });
  });

  it('types other 4xx as not retryable, naming the operation and GitHub message', async () => {
    const anonymous = new OctokitGitHub({ credentialsName: 'anon', apiUrl: env.sim.url, auth: { type: 'pat', token: '' } });
    const error = await anonymous.listRunnerDownloads(repo).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubApiError);
    expect(error).toMatchObject({ status: 401, retryable: false });
    expect((error as Error).message).toMatch(/^list_runner_downloads: GitHub answered 401: Requires authentication/);
  });

  it('reads its rate limit without spending a call of it, and fails as any call does on credentials GitHub refuses', async () => {
    await env.github.findRunnerByName(repo, 'nobody');
    const limit = await env.github.rateLimit();
    expect(limit).toEqual({ limit: 5000, remaining: 4999, resetAt: expect.any(String) });
    expect(Date.parse(limit.resetAt)).toBeGreaterThan(Date.now());
    expect((await env.github.rateLimit()).remaining).toBe(4999);
    const anonymous = new OctokitGitHub({ credentialsName: 'anon', apiUrl: env.sim.url, auth: { type: 'pat', token: '' } });
    await expect(anonymous.rateLimit()).rejects.toMatchObject({ status: 401, retryable: false });
  });

  it('records x-ratelimit-remaining and counts calls', async () => {
    const before = (await metricValue('runnerflow_github_requests_total', { operation: 'list_runners', outcome: 'ok' })) ?? 0;
    await env.github.findRunnerByName(repo, 'nobody');
    await env.github.findRunnerByName(repo, 'nobody');
    expect(await metricValue('runnerflow_github_requests_total', { operation: 'list_runners', outcome: 'ok' })).toBe(before + 2);
    expect(await metricValue('runnerflow_github_rate_limit_remaining', { credentials: 'sim', resource: 'core' })).toBe(4998);
  });

  it('authenticates as a GitHub App and reuses the installation token', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const app = new OctokitGitHub({ credentialsName: 'app', apiUrl: env.sim.url, auth: { type: 'app', appId: 12345, installationId: 678, privateKey } });
    await app.findRunnerByName(repo, 'a');
    await app.findRunnerByName(repo, 'b');
    await app.listRunnerDownloads(repo);
    const calls = env.sim.stats().callsByOperation;
    expect(calls['installation-access-token']).toBe(1);
    expect(calls['list-runners']).toBe(2);
  });
});
