import { randomBytes } from 'node:crypto';
import type { RunnerflowConfig } from '../config/schema';
import { resolveSecret } from '../config/load';
import type { ApiSecrets, Logger } from './deps';

/**
 * Resolves the API's secrets from their references. Without a configured
 * instance token key a random one is made: callbacks then only verify on this
 * process, which is fine for a single-process install and said in the log.
 */
export function resolveApiSecrets(config: RunnerflowConfig, env: NodeJS.ProcessEnv, logger: Logger): ApiSecrets {
  const adminToken = resolveSecret(config.api.adminToken, env);
  const webhookSecret = resolveSecret(config.api.webhookSecret, env);
  const previousWebhookSecret = resolveSecret(config.api.previousWebhookSecret, env);
  let instanceTokenKey = resolveSecret(config.api.instanceTokenSecret, env);
  if (!instanceTokenKey) {
    instanceTokenKey = randomBytes(32).toString('base64url');
    logger.warn('api.instanceTokenSecret is not set: instance tokens are signed with a per-process key, so only this process accepts their callbacks');
  }
  if (!adminToken) logger.warn('no admin token configured (RUNNERFLOW_ADMIN_TOKEN or api.adminToken): /api/v1 refuses every caller');
  if (!webhookSecret) logger.warn('no webhook secret configured (RUNNERFLOW_WEBHOOK_SECRET or api.webhookSecret): /webhooks/github is disabled');
  if (previousWebhookSecret && !webhookSecret) logger.warn('api.previousWebhookSecret is set without api.webhookSecret: /webhooks/github is disabled until the new secret is configured');
  if (previousWebhookSecret && previousWebhookSecret === webhookSecret) logger.warn('api.previousWebhookSecret is the same as api.webhookSecret: remove it, or give webhookSecret the new secret');
  return { adminToken, webhookSecret, instanceTokenKey, ...(previousWebhookSecret ? { previousWebhookSecret } : {}) };
}
