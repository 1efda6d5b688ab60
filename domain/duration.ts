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

/**
 * Past the ceiling, or not a whole number of milliseconds: Temporal's timers and
 * timeouts count in milliseconds, so "0.0001ms" would be a zero nobody asked for.
 */
function checked(ms: number, input: string | number, wholeMs: boolean): number {
  if (ms > MAX_DURATION_MS || ms === Number.POSITIVE_INFINITY) {
    throw new Error(`duration ${shown(input)} is longer than the maximum of 365d (${MAX_DURATION_MS} ms)`);
  }
  if (wholeMs && !Number.isInteger(ms)) {
    throw new Error(`duration ${shown(input)} is not a whole number of milliseconds${Number.isNaN(ms) ? '' : ` (${ms} ms)`}`);
  }
  return ms;
}

/**
 * "1.005" of a unit of 1000 ms is 1005 ms: the fraction's digits are multiplied
 * as an integer before the division, where 1.005 * 1000 in floating point is
 * 1004.9999999999999 and would be refused as a fraction of a millisecond. No
 * unit's fraction of more than ten digits (trailing zeros aside) comes to whole
 * milliseconds (a day is 2^10 * 3^3 * 5^5 * 100 ms), so such a part is a
 * fraction without counting it, before its digits could overflow.
 */
function partMs(amount: string, unitMs: number): number {
  const [whole, rawFraction = ''] = amount.split('.');
  const fraction = rawFraction.replace(/0+$/, '');
  if (fraction.length > 10) return Number.NaN;
  return Number(whole) * unitMs + (Number(fraction || '0') * unitMs) / 10 ** fraction.length;
}

/**
 * Parses "1500ms", "30s", "5m", "1h30m" or a plain number of milliseconds, up to 365 days,
 * to a whole number of milliseconds (`wholeMs: false` keeps a fraction, as pools' histories
 * from before the rule took it).
 */
export function parseDuration(input: string | number, { wholeMs = true }: { wholeMs?: boolean } = {}): number {
  if (typeof input === 'number') {
    if (Number.isNaN(input) || input < 0) throw new Error(`duration must be a non-negative number of milliseconds, got ${input}`);
    return checked(input, input, wholeMs);
  }
  const text = input.trim();
  if (/^\d+$/.test(text)) return checked(Number(text), input, wholeMs);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new Error(`${shown(input)} is not a duration (examples: 500ms, 30s, 5m, 1h30m)`);
  }
  // As read before the rule, in floating point: a pool replaying a signal must get the value it got then.
  if (!wholeMs) return checked(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0), input, false);
  return checked(
    parts.reduce((sum, p) => sum + partMs(p[1]!, UNIT_MS[p[2]!]!), 0),
    input,
    true,
  );
}

function durationField(wholeMs: boolean) {
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    try {
      return parseDuration(value, { wholeMs });
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

/** A zod field accepting a duration string or milliseconds, yielding whole milliseconds. */
export const durationMs = durationField(true);

/**
 * The same, as it read durations before it refused fractions of a millisecond, sums and all:
 * what a pool replaying a signal from then must read it as.
 */
export const durationMsWithFractions = durationField(false);
