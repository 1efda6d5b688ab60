/**
 * The serverless entry point checks its configuration when a container starts.
 * A file of its own: the container's app is made once per module, and these
 * tests need a container that has not started yet.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { containerStarts, handler } from '../../api/lambda';
import type { LambdaHttpEvent } from '../../api/lambda-event';
import { uniqueName } from '../support/temporal';

const health = (): LambdaHttpEvent => ({
  version: '2.0',
  rawPath: '/healthz',
  rawQueryString: '',
  headers: { host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
  requestContext: { http: { method: 'GET', path: '/healthz', protocol: 'HTTP/1.1', sourceIp: '140.82.115.1' } },
  isBase64Encoded: false,
});

const saved = { ...process.env };
beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-lambda-start-'));
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, ['providers:', `  - { type: fake, name: fake, stateDir: ${join(dir, 'machines')} }`].join('\n'));
  Object.assign(process.env, {
    RUNNERFLOW_CONFIG: configPath,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    RUNNERFLOW_TASK_QUEUE: uniqueName('tq-lambda-start'),
    RUNNERFLOW_ADMIN_TOKEN: 'lambda-admin-token-0123456789',
    RUNNERFLOW_WEBHOOK_SECRET: 'lambda-webhook-secret-0123',
    RUNNERFLOW_LOG_LEVEL: 'silent',
  });
});
afterAll(() => {
  process.env = saved;
});

type ErrorBody = { error: { code: string; message: string } };

// In order: each start that fails leaves the container to try again on its next invocation.
describe('Lambda container start-up', () => {
  it('refuses to start without an instance-token key, naming the setting', async () => {
    delete process.env.RUNNERFLOW_INSTANCE_TOKEN_SECRET;
    const refused = await handler(health());
    expect(refused.statusCode).toBe(503);
    const body = JSON.parse(refused.body) as ErrorBody;
    expect(body.error).toMatchObject({ code: 'unavailable' });
    expect(body.error.message).toMatch(/RUNNERFLOW_INSTANCE_TOKEN_SECRET \(or api.instanceTokenSecret\) is required/);
  });

  it('refuses an instance-token key too short to sign with, and starts once it is fixed', async () => {
    process.env.RUNNERFLOW_INSTANCE_TOKEN_SECRET = 'short-key';
    const refused = await handler(health());
    expect(refused.statusCode).toBe(503);
    const body = JSON.parse(refused.body) as ErrorBody;
    expect(body.error.message).toMatch(/RUNNERFLOW_INSTANCE_TOKEN_SECRET.* is 9 characters long; instance tokens need at least 16/);
    // The key itself never appears in an answer.
    expect(refused.body).not.toContain('short-key');

    process.env.RUNNERFLOW_INSTANCE_TOKEN_SECRET = 'a-key-long-enough-to-sign-0123456789';
    const started = await handler(health());
    expect(started.statusCode).toBe(200);
    expect(containerStarts()).toBe(3);
  });
});
