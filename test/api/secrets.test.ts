/**
 * The API's secrets as resolved at start: a webhook secret rotation configured by halves is said
 * in the log, naming the fields; a secret that cannot be read stops the start, naming where.
 */
import { describe, expect, it } from 'vitest';
import { resolveApiSecrets } from '../../api/secrets';
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
