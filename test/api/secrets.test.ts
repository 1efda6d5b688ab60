/**
 * The API's secrets as resolved at start: a webhook secret rotation configured by halves is said
 * in the log, naming the fields; a secret that cannot be read stops the start, naming where.
 * Secrets given as files are read again when replaced, so a rotation takes no restart.
 */
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FORCED_RECHECK_GAP_MS, resolveApiSecrets } from '../../api/secrets';
import { parseConfig } from '../../config/load';
import { recordingLogger } from './support';

const KEY = 'an-instance-token-key-long-enough';
const resolve = (api: Record<string, unknown>, env: Record<string, string>) => {
  const logger = recordingLogger();
  const secrets = resolveApiSecrets(parseConfig({ api: { instanceTokenSecret: { env: 'KEY' }, ...api } }), { KEY, ...env }, logger);
  // The admin token is not this file's concern.
  return { secrets, warnings: logger.entries.filter((e) => e.level === 'warn' && !e.message.includes('admin token')).map((e) => e.message) };
};

describe('the webhook secrets of a rotation', () => {
  it('are both resolved, with nothing to warn of', () => {
    const { secrets, warnings } = resolve({ webhookSecret: { env: 'NEW' }, previousWebhookSecret: { env: 'OLD' } }, { NEW: 'new-secret', OLD: 'old-secret' });
    expect(secrets).toMatchObject({ webhookSecret: 'new-secret', previousWebhookSecret: 'old-secret' });
    expect(warnings).toEqual([]);
  });

  it('warn of a previous secret without a current one, and of one equal to it', () => {
    const alone = resolve({ previousWebhookSecret: { env: 'OLD' } }, { OLD: 'old-secret' });
    expect(alone.warnings).toContain('api.previousWebhookSecret is set without api.webhookSecret: /webhooks/github is disabled until the new secret is configured');
    const same = resolve({ webhookSecret: { env: 'NEW' }, previousWebhookSecret: { env: 'OLD' } }, { NEW: 'one-secret', OLD: 'one-secret' });
    expect(same.warnings).toEqual(['api.previousWebhookSecret is the same as api.webhookSecret: remove it, or give webhookSecret the new secret']);
  });

  it('refuse to start on a previous secret whose variable is not set, naming it', () => {
    expect(() => resolve({ webhookSecret: { env: 'NEW' }, previousWebhookSecret: { env: 'OLD' } }, { NEW: 'new-secret' })).toThrow('secret environment variable OLD is not set');
  });
});

describe('API secrets given as files', () => {
  let dir: string;
  let clock: number;
  const file = (name: string, value: string) => {
    const path = join(dir, name);
    writeFileSync(path, value);
    // Another modification time, as a replacement a while later would have.
    utimesSync(path, clock / 1_000, clock / 1_000);
    return path;
  };
  const start = (previous = 'webhook-older') => {
    const logger = recordingLogger();
    const config = parseConfig({
      api: {
        instanceTokenSecret: { env: 'KEY' },
        adminToken: { file: file('admin', 'admin-before') },
        webhookSecret: { file: file('webhook', 'webhook-before') },
        previousWebhookSecret: { file: file('previous', previous) },
      },
      github: { secretRecheck: '10s' },
    });
    return { logger, secrets: resolveApiSecrets(config, { KEY }, logger, () => clock) };
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'api-secrets-'));
    clock = 1_700_000_000_000;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('are read again once the interval has passed, and said in the log without their values', () => {
    const { secrets, logger } = start();
    clock += 1_000;
    file('webhook', 'webhook-after');
    file('admin', 'admin-after');
    expect(secrets.webhookSecret).toBe('webhook-before');
    clock += 10_000;
    expect(secrets.webhookSecret).toBe('webhook-after');
    expect(secrets.adminToken).toBe('admin-after');
    expect(logger.entries.map((e) => e.message)).toEqual(
      expect.arrayContaining([
        'api.webhookSecret: its secret file has a new value; requests from now on are checked against it',
        'api.adminToken: its secret file has a new value; requests from now on are checked against it',
      ]),
    );
    expect(JSON.stringify(logger.entries)).not.toMatch(/-after|-before|-older/);
  });

  it('are looked at before the interval when a caller matched none, at most once a second', () => {
    const { secrets } = start();
    clock += 1_000;
    file('webhook', 'webhook-after');
    expect(secrets.recheck?.()).toBe(true);
    expect(secrets.webhookSecret).toBe('webhook-after');

    // Anyone can send a wrong signature: a second look within the gap reads nothing.
    clock += FORCED_RECHECK_GAP_MS / 2;
    file('admin', 'admin-after');
    expect(secrets.recheck?.()).toBe(false);
    expect(secrets.adminToken).toBe('admin-before');
    clock += FORCED_RECHECK_GAP_MS;
    expect(secrets.recheck?.()).toBe(true);
    expect(secrets.adminToken).toBe('admin-after');
    // Nothing changed since: a look finds nothing new.
    clock += FORCED_RECHECK_GAP_MS;
    expect(secrets.recheck?.()).toBe(false);
  });

  it('end a rotation when the previous secret\'s file is emptied, while an emptied current secret keeps its value', () => {
    const { secrets, logger } = start();
    expect(secrets.previousWebhookSecret).toBe('webhook-older');
    clock += 1_000;
    file('previous', '');
    file('webhook', '\n');
    clock += 10_000;
    expect(secrets.previousWebhookSecret).toBeUndefined();
    expect(secrets.webhookSecret).toBe('webhook-before');
    expect(logger.entries.filter((e) => e.level === 'warn').map((e) => e.message)).toContain(
      'api.webhookSecret: its secret file changed but cannot be read yet; the last value stays in use',
    );
  });

  it('start with no previous secret when its file is empty', () => {
    expect(start('').secrets.previousWebhookSecret).toBeUndefined();
  });
});
