/**
 * An enterprise has no webhooks a token can read, so an enterprise pool's failed deliveries are
 * asked for again through the webhooks of the organisations its jobs come from, which only the
 * pool knows (its recent repositories). The redelivery pass asks the pool for them once, and
 * again only when the digest of them in the pool's glance has changed.
 */
import { describe, expect, it } from 'vitest';
import { poolScopesFrom } from '../../activities/webhook-redelivery-activities';
import { scopeKey } from '../../github/port';
import { deletePoolSignal, recentRepositoriesQuery } from '../../workflows/pool-messages';
import { poolHearingRepositories, poolSettings } from '../pool/helpers';
import { queryCountingClient } from '../support/counting-client';
import { uniqueName, useTestWorker } from '../support/temporal';

const env = useTestWorker();

describe('an enterprise pool’s organisations, for its failed deliveries', () => {
  it('are asked of the pool once, and again only when its glance shows its repositories changed', async () => {
    const credentials = uniqueName('ent-creds');
    const enterprise = uniqueName('ent').toLowerCase().slice(0, 30);
    const [first, second] = [uniqueName('org-a').toLowerCase().slice(0, 30), uniqueName('org-b').toLowerCase().slice(0, 30)];
    const settings = poolSettings({ provider: uniqueName('ent-provider'), minIdleRunners: 0, maxRunners: 0, github: { credentials, scope: { kind: 'enterprise', enterprise } } });
    const { pool, listedRepositories, queue } = await poolHearingRepositories(env.client, env.w.taskQueue, settings);
    const { client, asked } = queryCountingClient(env.client, recentRepositoriesQuery.name);
    const scopesOf = poolScopesFrom(client, env.w.taskQueue, 2_000, () => undefined);
    const followed = async () => {
      const found = await scopesOf(credentials);
      expect(found.failed).toEqual([]);
      return found.scopes.map(scopeKey).sort();
    };
    try {
      await queue(9_101, `${first}/app`);
      await listedRepositories(1);
      expect(await followed()).toEqual([`enterprise:${enterprise}`, `org:${first}`].sort());
      expect(asked()).toBe(1);

      // Nothing heard since: the organisations the pool named are followed without asking.
      expect(await followed()).toEqual([`enterprise:${enterprise}`, `org:${first}`].sort());
      expect(asked()).toBe(1);

      // A job from another organisation's repository changes the digest: the pool is asked again.
      await queue(9_102, `${second}/api`);
      await listedRepositories(2);
      expect(await followed()).toEqual([`enterprise:${enterprise}`, `org:${first}`, `org:${second}`].sort());
      expect(asked()).toBe(2);
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});
