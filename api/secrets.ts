import { randomBytes } from 'node:crypto';
import type { RunnerflowConfig, SecretRef } from '../config/schema';
import { resolveSecret } from '../config/load';
import { RotatingSecret, type RotatingSecretOptions } from '../config/rotating-secret';
import type { ApiSecrets, Logger } from './deps';

/** The least time between two looks at the secret files forced by a caller whose secret matched none. */
export const FORCED_RECHECK_GAP_MS = 1_000;

/**
 * A secret of the API as it is now. Given as a file, it is rotated in place like GitHub's
 * credentials (`config/rotating-secret.ts`): a webhook secret or an admin token an operator
 * replaces must not take a restart of every API process.
 */
class ApiSecret {
  private last: string;

  constructor(
    private readonly name: string,
    private readonly secret: RotatingSecret,
    private readonly logger: Logger,
  ) {
    this.last = secret.read().value;
  }

  get value(): string | undefined {
    this.look();
    return this.last === '' ? undefined : this.last;
  }

  /** Looks at the file whatever the interval; true when its value changed. */
  lookNow(): boolean {
    this.secret.recheckSoon();
    return this.look();
  }

  private look(): boolean {
    const reading = this.secret.read();
    if (reading.problem) this.logger.warn(`${this.name}: its secret file changed but cannot be read yet; the last value stays in use`, { problem: reading.problem });
    if (reading.changed) this.logger.info(`${this.name}: its secret file has a new value; requests from now on are checked against it`);
    this.last = reading.value;
    return reading.changed;
  }
}

/**
 * Resolves the API's secrets from their references. Without a configured
 * instance token key a random one is made: callbacks then only verify on this
 * process, which is fine for a single-process install and said in the log.
 *
 * The admin token and the webhook's secrets are read again when their files change. The instance
 * token key is read once: a runner keeps the token it was given at its start, signed with the key
 * of that moment, so a new key would refuse every runner already at work.
 */
export function resolveApiSecrets(config: RunnerflowConfig, env: NodeJS.ProcessEnv, logger: Logger, now: () => number = Date.now): ApiSecrets {
  const watched = (name: string, ref: SecretRef | undefined, options?: RotatingSecretOptions): ApiSecret | undefined =>
    ref ? new ApiSecret(name, new RotatingSecret(ref, env, config.github.secretRecheck, now, options), logger) : undefined;
  const adminToken = watched('api.adminToken', config.api.adminToken);
  const webhookSecret = watched('api.webhookSecret', config.api.webhookSecret);
  // Emptying its file ends a rotation: the old secret is no longer accepted, with no restart.
  const previousWebhookSecret = watched('api.previousWebhookSecret', config.api.previousWebhookSecret, { emptyMeansNone: true });
  let instanceTokenKey = resolveSecret(config.api.instanceTokenSecret, env);
  if (!instanceTokenKey) {
    instanceTokenKey = randomBytes(32).toString('base64url');
    logger.warn('api.instanceTokenSecret is not set: instance tokens are signed with a per-process key, so only this process accepts their callbacks');
  }
  if (!adminToken?.value) logger.warn('no admin token configured (RUNNERFLOW_ADMIN_TOKEN or api.adminToken): /api/v1 refuses every caller');
  if (!webhookSecret?.value) logger.warn('no webhook secret configured (RUNNERFLOW_WEBHOOK_SECRET or api.webhookSecret): /webhooks/github is disabled');
  const previous = previousWebhookSecret?.value;
  if (previous && !webhookSecret?.value) logger.warn('api.previousWebhookSecret is set without api.webhookSecret: /webhooks/github is disabled until the new secret is configured');
  if (previous && previous === webhookSecret?.value) logger.warn('api.previousWebhookSecret is the same as api.webhookSecret: remove it, or give webhookSecret the new secret');

  let lastForcedAt = -Infinity;
  const key = instanceTokenKey;
  return {
    get adminToken() {
      return adminToken?.value;
    },
    get webhookSecret() {
      return webhookSecret?.value;
    },
    get previousWebhookSecret() {
      return previousWebhookSecret?.value;
    },
    instanceTokenKey: key,
    recheck() {
      // Each call may read the files, and anyone can send a wrong signature: at most once a second.
      if (now() - lastForcedAt < FORCED_RECHECK_GAP_MS) return false;
      lastForcedAt = now();
      let changed = false;
      for (const secret of [adminToken, webhookSecret, previousWebhookSecret]) if (secret?.lookNow()) changed = true;
      return changed;
    },
  };
}
