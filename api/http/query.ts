import { z } from 'zod';
import { HttpError, validationError } from './errors';

/** A boolean query flag: `true`/`false`/`1`/`0`, absent means false. */
export const queryFlag = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/** A whole number in a query, written in digits: not `0x10`, `1e3` or an empty string read as 0. */
export const queryInt = (min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number written in digits')
    .transform(Number)
    .pipe(z.number().min(min).max(max))
    .default(fallback);

/**
 * Validates the query string; unknown parameters are ignored. A known one given twice, or given
 * empty, is refused: which of two values counts, or whether `limit=` means 0, would be a guess.
 */
export function parseQuery<S extends z.ZodObject>(url: URL, schema: S): z.output<S> {
  const raw: Record<string, string> = {};
  const issues: { path: string; message: string }[] = [];
  for (const key of Object.keys(schema.shape)) {
    const values = url.searchParams.getAll(key);
    if (values.length > 1) issues.push({ path: `query.${key}`, message: `given ${values.length} times; give it once` });
    else if (values[0]?.trim() === '') issues.push({ path: `query.${key}`, message: 'is empty; give a value or leave it out' });
    else if (values[0] !== undefined) raw[key] = values[0];
  }
  if (issues.length > 0) {
    throw new HttpError(400, 'validation_failed', `invalid query: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  const result = schema.safeParse(raw);
  if (!result.success) throw validationError(result.error, 'query', 'query');
  return result.data;
}
