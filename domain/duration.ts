import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Longest duration accepted. Past it a value is a typo rather than a wish, and
 * overflowing ones (Infinity) would reach JSON as null, which readers take as 0.
 */
export const MAX_DURATION_MS = 365 * UNIT_MS.d!;

/** The input as an error message shows it: a pasted run of digits must not flood the message. */
function shown(input: string | number): string {
  const text = typeof input === 'number' ? String(input) : JSON.stringify(input);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function withinCeiling(ms: number, input: string | number): number {
  if (!Number.isFinite(ms) || ms > MAX_DURATION_MS) {
    throw new Error(`duration ${shown(input)} is longer than the maximum of 365d (${MAX_DURATION_MS} ms)`);
  }
  return ms;
}

/** Parses "1500ms", "30s", "5m", "1h30m" or a plain number of milliseconds, up to 365 days. */
export function parseDuration(input: string | number): number {
  if (typeof input === 'number') {
    if (Number.isNaN(input) || input < 0) throw new Error(`duration must be a non-negative number of milliseconds, got ${input}`);
    return withinCeiling(input, input);
  }
  const text = input.trim();
  if (/^\d+$/.test(text)) return withinCeiling(Number(text), input);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new Error(`${shown(input)} is not a duration (examples: 500ms, 30s, 5m, 1h30m)`);
  }
  return withinCeiling(
    parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0),
    input,
  );
}

/** A zod field accepting a duration string or milliseconds, yielding milliseconds. */
export const durationMs = z.union([z.string(), z.number()]).transform((value, ctx) => {
  try {
    return parseDuration(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});
