/**
 * The `updatePool` signal's check. A module of its own because it brings zod and the pool
 * settings schema into the workflow: the worker evaluates the workflow modules again for every
 * workflow it creates, and evaluating these was a sixth of the workflow thread's time per
 * runner lifecycle (bench/README.md). Only pool workflows load this (runner-pool.ts).
 */
import { extraSpecsCappedSettingsSchema, newPoolSettingsSchema, poolSettingsSchema, type PoolSettings } from '../domain/pool';
import { asObject, ignored } from './signal-input';

/** Which of the API's size caps on new settings a pool's history holds its signals to (each came with a `patched` branch). */
export type SettingsCaps = 'none' | 'extraSpecs' | 'all';

const SCHEMA_BY_CAPS = { none: poolSettingsSchema, extraSpecs: extraSpecsCappedSettingsSchema, all: newPoolSettingsSchema } as const;

/**
 * New settings for a pool, checked against the same schema the API uses: a signal typed into the
 * Web UI must not leave the pool deciding on a maxRunners that is not a number, nor on settings
 * too large for its runners' starts.
 */
export function poolSettingsArgs(args: unknown, options: { caps?: SettingsCaps } = {}): PoolSettings | undefined {
  const result = SCHEMA_BY_CAPS[options.caps ?? 'none'].safeParse(asObject(args).settings);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  return ignored('updatePool', `settings are not valid pool settings (${issue ? `${issue.path.join('.') || 'settings'}: ${issue.message}` : 'missing'})`, args);
}
