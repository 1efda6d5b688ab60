import type { PoolSettings } from '../domain/pool';
import { scaleSetNameOf, type ScaleSetIdentity } from '../domain/scale-set';
import type { PoolMemo } from './pool-messages';

/** What job routing needs to know about a pool, and the scale set a scale-set pool registered, kept in its workflow memo. */
export function poolMemoOf(settings: PoolSettings): PoolMemo {
  return {
    labels: settings.labels,
    priority: settings.priority,
    enabled: settings.enabled,
    maxRunners: settings.maxRunners,
    provider: settings.provider,
    scope: settings.github.scope,
    credentials: settings.github.credentials,
    ...(settings.runnerPrefix ? { runnerPrefix: settings.runnerPrefix } : {}),
    // Only scale-set pools are marked: routing skips them, webhook pools' memo stays as it was.
    ...(settings.mode === 'scaleSet'
      ? { mode: settings.mode, scaleSet: { name: scaleSetNameOf(settings), runnerGroup: settings.runnerGroup, credentials: settings.github.credentials } }
      : {}),
  };
}

/**
 * Where a pool registers its runners and with which credentials, as its memo says; undefined for a
 * memo written before it named the credentials (its reader asks the pool instead).
 */
export function githubOfMemo(memo: Partial<PoolMemo> | undefined): Pick<PoolSettings['github'], 'credentials' | 'scope'> | undefined {
  return memo?.credentials && memo.scope ? { credentials: memo.credentials, scope: memo.scope } : undefined;
}

/**
 * The scale set a scale-set pool's memo names, so that a change of it is refused without asking
 * the pool; undefined for a memo written before it named one.
 */
export function scaleSetIdentityOfMemo(memo: Partial<PoolMemo> | undefined): ScaleSetIdentity | undefined {
  const set = memo?.scaleSet;
  if (memo?.mode !== 'scaleSet' || !set || !memo.scope || !Array.isArray(memo.labels)) return undefined;
  return { name: set.name, runnerGroup: set.runnerGroup, credentials: set.credentials, scope: memo.scope, labels: memo.labels };
}
