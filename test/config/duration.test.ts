/**
 * Durations come from config files, the API and the environment: whatever is
 * accepted must be a finite number of milliseconds JSON can carry.
 */
import { describe, expect, it } from 'vitest';
import { MAX_DURATION_MS, durationMs, parseDuration } from '../../domain/duration';

describe('parseDuration', () => {
  it('reads units, sums and plain milliseconds', () => {
    expect(parseDuration('1500ms')).toBe(1_500);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration(' 42 ')).toBe(42);
    expect(parseDuration(0)).toBe(0);
    expect(parseDuration('365d')).toBe(MAX_DURATION_MS);
    expect(parseDuration(MAX_DURATION_MS)).toBe(MAX_DURATION_MS);
  });

  it.each([
    ['digits that overflow to Infinity', '9'.repeat(400)],
    ['a unit count that overflows to Infinity', `${'9'.repeat(400)}h`],
    ['a sum that overflows to Infinity', `${'9'.repeat(308)}d${'9'.repeat(308)}d`],
    ['a day past the ceiling', '366d'],
    ['one millisecond past the ceiling', String(MAX_DURATION_MS + 1)],
    ['a number past the ceiling', MAX_DURATION_MS + 1],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('refuses %s, naming the value and the ceiling', (_what, input) => {
    expect(() => parseDuration(input)).toThrow(/^duration .+ is longer than the maximum of 365d \(31536000000 ms\)$/);
  });

  it('reads fractions of a unit as whole milliseconds, exactly', () => {
    expect(parseDuration('1.005s')).toBe(1_005);
    expect(parseDuration('0.29s')).toBe(290);
    expect(parseDuration('2.5m')).toBe(150_000);
    expect(parseDuration('0.00000125d')).toBe(108);
    expect(parseDuration(`1.${'0'.repeat(400)}s`)).toBe(1_000);
  });

  it.each([
    ['a fraction of a millisecond', '0.0001ms', /^duration "0\.0001ms" is not a whole number of milliseconds \(0\.0001 ms\)$/],
    ['half a millisecond as a number', 1.5, /^duration 1\.5 is not a whole number of milliseconds \(1\.5 ms\)$/],
    ['a day\'s fraction under a millisecond', '0.00000001d', /is not a whole number of milliseconds \(0\.864 ms\)$/],
    ['a fraction with more digits than any unit divides into', `1.${'9'.repeat(400)}s`, /^duration "1\.9{34}\.\.\. is not a whole number of milliseconds$/],
  ])('refuses %s, naming the value', (_what, input, message) => {
    expect(() => parseDuration(input)).toThrow(message);
  });

  it('shortens a long value in the message', () => {
    expect(() => parseDuration('9'.repeat(400))).toThrow(`duration "${'9'.repeat(36)}... is longer than the maximum of 365d`);
  });

  it('still refuses what is no duration, and negative numbers', () => {
    expect(() => parseDuration('soon')).toThrow('"soon" is not a duration (examples: 500ms, 30s, 5m, 1h30m)');
    expect(() => parseDuration(-1)).toThrow('non-negative');
    expect(() => parseDuration(Number.NaN)).toThrow('non-negative');
  });

  it('turns into an issue of the zod field, never a value JSON would write as null', () => {
    const result = durationMs.safeParse('9'.repeat(400));
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/is longer than the maximum of 365d/);
  });
});
