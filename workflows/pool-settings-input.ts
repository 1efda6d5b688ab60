/**
 * The `updatePool` signal's check. A module of its own because it brings zod and the pool
 * settings schema into the workflow: the worker evaluates the workflow modules again for every
 * workflow it creates, and evaluating these was a sixth of the workflow thread's time per
 * runner lifecycle (bench/README.md). Only pool workflows load this (runner-pool.ts).
 */
import { earlierSignalSettingsSchemas, newPoolSettingsSchema, type PoolSettings } from '../domain/pool';
import { asObject, ignored } from './signal-input';

/**
 * Which of the checks on new settings a pool's history holds its signals to, each of which came
 * with a `patched` branch: the size caps on what every runner carries (`extraSpecs` first, then
 * the rest), then whole milliseconds in durations, which only the newest schema holds to.
 */
export type SettingsChecks = 'none' | 'extraSpecs' | 'all' | 'wholeMs';

let earlier: ReturnType<typeof earlierSignalSettingsSchemas> | undefined;

function schemaFor(checks: SettingsChecks) {
  if (checks === 'wholeMs') return newPoolSettingsSchema;
  earlier ??= earlierSignalSettingsSchemas();
  return earlier[checks];
}

/**
 * New settings for a pool, checked against the same schema the API uses: a signal typed into the
 * Web UI must not leave the pool deciding on a maxRunners that is not a number, nor on settings
 * too large for its runners' starts.
 */
export function poolSettingsArgs(args: unknown, options: { checks?: SettingsChecks } = {}): PoolSettings | undefined {
  const result = schemaFor(options.checks ?? 'wholeMs').safeParse(asObject(args).settings);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  return ignored('updatePool', `settings are not valid pool settings (${issue ? `${issue.path.join('.') || 'settings'}: ${issue.message}` : 'missing'})`, args);
}
