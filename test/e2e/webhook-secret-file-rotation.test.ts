/**
 * A webhook secret and an admin token rotated through their files while runnerflow runs: each
 * step of a rotation takes effect at the first request that needs it, with no API process
 * restarted, and no delivery signed with a secret runnerflow holds is refused.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { FORCED_RECHECK_GAP_MS } from '../../api/secrets';
import type { InstallationStatus } from '../../api/installation-status';
import { adminRequest } from '../../devstack/stack';
import { eventually } from '../support/temporal';
import { e2ePool, useE2EStack } from './stack';

const dir = mkdtempSync(join(tmpdir(), 'rotated-webhook-'));
const files = { admin: join(dir, 'admin'), webhook: join(dir, 'webhook'), previous: join(dir, 'previous') };
const FIRST_SECRET = 'the-first-webhook-secret';
const SECOND_SECRET = 'the-second-webhook-secret';
writeFileSync(files.admin, 'the-first-admin-token\n');
writeFileSync(files.webhook, `${FIRST_SECRET}\n`);
// No rotation under way: an empty file is no previous secret.
writeFileSync(files.previous, '');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Ten minutes between looks at the files: only a request that matched nothing can make the API read them this soon.
const stack = useE2EStack(
  { jobDurationMs: 200 },
  {
    config: {
      api: { adminToken: { file: files.admin }, webhookSecret: { file: files.webhook }, previousWebhookSecret: { file: files.previous } },
      github: { secretRecheck: '10m' },
    },
  },
);

describe('a webhook secret and an admin token rotated through their files', () => {
  it('take effect at the first request that needs them, with no restart', async () => {
    let adminToken = 'the-first-admin-token';
    const admin = (method: string, path: string, body?: unknown) => adminRequest(stack.api.url, adminToken, method, path, body);
    const webhooksCheck = async () => ((await admin('GET', '/api/v1/status')).body as InstallationStatus).checks.find((c) => c.name === 'webhooks')!;
    const pool = e2ePool('rotated-webhook', { maxRunners: 2 });
    expect((await admin('POST', '/api/v1/pools', pool)).status).toBe(201);
    const runJob = async (secret: string) => {
      stack.sim.setWebhook({ secret });
      const from = stack.sim.deliveries().length;
      const job = stack.sim.queueJob({ repository: 'acme/rotated-webhook', labels: pool.labels });
      await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, `a job signed with ${secret} to run`);
      await stack.sim.webhooksIdle();
      return stack.sim.deliveries().slice(from).map((d) => d.status);
    };
    const taken = (statuses: unknown[]) => {
      expect(statuses.length).toBeGreaterThanOrEqual(3);
      expect(statuses).toEqual(statuses.map(() => 200));
    };

    taken(await runJob(FIRST_SECRET));

    // The rotation's first step: the new secret, and the old one kept beside it.
    writeFileSync(files.webhook, `${SECOND_SECRET}\n`);
    writeFileSync(files.previous, `${FIRST_SECRET}\n`);
    await sleep(FORCED_RECHECK_GAP_MS);
    // GitHub has the new secret: its first delivery makes the API read the files.
    taken(await runJob(SECOND_SECRET));
    // A delivery GitHub signed before it had the new secret, sent again: still taken.
    taken(await runJob(FIRST_SECRET));
    const underWay = await webhooksCheck();
    expect(underWay.status).toBe('warning');
    expect((underWay.problems ?? []).join('\n')).toContain(`empty its file ${files.previous} (every API process stops accepting it, with no restart)`);

    // The rotation's end: the old secret's file emptied, and the old secret refused from then on.
    writeFileSync(files.previous, '');
    await sleep(FORCED_RECHECK_GAP_MS);
    stack.sim.setWebhook({ secret: FIRST_SECRET });
    const from = stack.sim.deliveries().length;
    const refused = stack.sim.queueJob({ repository: 'acme/rotated-webhook', labels: pool.labels });
    await stack.sim.webhooksIdle();
    expect(stack.sim.deliveries().slice(from).map((d) => d.status)).toEqual([401]);
    expect(stack.sim.jobs().find((j) => j.id === refused.id)?.status).toBe('queued');
    stack.sim.setWebhook({ secret: SECOND_SECRET });
    const over = await webhooksCheck();
    expect((over.problems ?? []).join('\n')).not.toContain('a secret rotation is under way');
    expect(over.summary).not.toContain('rotation');

    // The admin token replaced: the new one is taken at once, the old one refused.
    writeFileSync(files.admin, 'the-second-admin-token\n');
    await sleep(FORCED_RECHECK_GAP_MS);
    const oldToken = adminToken;
    adminToken = 'the-second-admin-token';
    expect((await admin('GET', '/api/v1/pools')).status).toBe(200);
    adminToken = oldToken;
    expect((await admin('GET', '/api/v1/pools')).status).toBe(403);
  });
});
