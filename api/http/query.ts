import { z } from 'zod';
import { validationError } from './errors';

/** A boolean query flag: `true`/`false`/`1`/`0`, absent means false. */
export const queryFlag = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/** Validates the query string; unknown parameters are ignored. */
export function parseQuery<S extends z.ZodObject>(url: URL, schema: S): z.output<S> {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = url.searchParams.get(key);
    if (value !== null) raw[key] = value;
  }
  const result = schema.safeParse(raw);
  if (!result.success) throw validationError(result.error, 'query', 'query');
  return result.data;
}
