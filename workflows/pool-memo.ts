import type { PoolSettings } from '../domain/pool';
import type { PoolMemo } from './pool-messages';

/** What job routing needs to know about a pool, kept in its workflow memo. */
export function poolMemoOf(settings: PoolSettings): PoolMemo {
  return {
    labels: settings.labels,
    priority: settings.priority,
    enabled: settings.enabled,
    maxRunners: settings.maxRunners,
    provider: settings.provider,
    scope: settings.github.scope,
    mode: settings.mode,
  };
}
