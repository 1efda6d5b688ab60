/**
 * The `updatePool` signal's check. A module of its own because it brings zod and the pool
 * settings schema into the workflow: the worker evaluates the workflow modules again for every
 * workflow it creates, and evaluating these was a sixth of the workflow thread's time per
 * runner lifecycle (bench/README.md). Only pool workflows load this (runner-pool.ts).
 */
import { newPoolSettingsSchema, poolSettingsSchema, type PoolSettings } from '../domain/pool';
import { asObject, ignored } from './signal-input';

/**
 * New settings for a pool, checked against the same schema the API uses: a signal typed into the
 * Web UI must not leave the pool deciding on a maxRunners that is not a number. `capped`: also
 * refuse what the API refuses for new settings (the `extraSpecs` size cap).
 */
export function poolSettingsArgs(args: unknown, options: { capped?: boolean } = {}): PoolSettings | undefined {
  const result = (options.capped ? newPoolSettingsSchema : poolSettingsSchema).safeParse(asObject(args).settings);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  return ignored('updatePool', `settings are not valid pool settings (${issue ? `${issue.path.join('.') || 'settings'}: ${issue.message}` : 'missing'})`, args);
}
