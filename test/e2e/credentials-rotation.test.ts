/**
 * A token that expires under a running installation: GitHub refuses it, the operator writes its
 * successor into the secret file, and the next runner is registered with the new token, with no
 * process restarted and no job lost.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/temporal';
import { api, e2ePool, useE2EStack } from './stack';

const dir = mkdtempSync(join(tmpdir(), 'rotated-token-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, 'ghp_before_rotation\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Ten minutes between looks at the file: only GitHub's refusal can make the worker read it this soon.
const stack = useE2EStack({ jobDurationMs: 200 }, { githubSecretFile: tokenFile, config: { github: { secretRecheck: '10m' } } });

const completed = (id: number, what: string) =>
  eventually(() => {
    const job = stack.sim.jobs().find((j) => j.id === id);
    return job?.status === 'completed' ? job : undefined;
  }, 45_000, what);

describe('a token rotated while runnerflow runs', () => {
  it('registers the next runner with the new token once GitHub refused the old one', async () => {
    const pool = e2ePool('rotated');
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const labels = ['self-hosted', 'linux', 'rotated'];
    expect((await completed(stack.sim.queueJob({ repository: 'acme/rotated', labels }).id, 'a job before the rotation')).conclusion).toBe('success');

    // The token expires at GitHub; a job comes before the operator has replaced it.
    stack.sim.revokeToken('ghp_before_rotation');
    const minted = () => stack.sim.stats().callsByOperation['generate-jitconfig'] ?? 0;
    const mintedBefore = minted();
    const job = stack.sim.queueJob({ repository: 'acme/rotated', labels });
    await eventually(() => (minted() > mintedBefore ? true : undefined), 30_000, 'a runner registration refused with the expired token');
    expect(stack.sim.jobs().find((j) => j.id === job.id)?.status).toBe('queued');

    writeFileSync(tokenFile, 'ghp_after_rotation\n');
    const done = await completed(job.id, 'the job run after the rotation');
    expect(done.conclusion).toBe('success');
    expect(done.runnerName).toMatch(new RegExp(`^${pool.name}-`));
  });
});
