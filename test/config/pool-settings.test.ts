/**
 * A pool's settings checks that compare two fields speak only when both fields
 * are valid on their own, so one mistake gets one message; a mistake elsewhere
 * does not hide them.
 */
import { describe, expect, it } from 'vitest';
import { poolSettingsSchema } from '../../domain/pool';

const base = { name: 'linux', github: { scope: { kind: 'org', org: 'acme' } }, labels: ['linux'], provider: 'fake' };

function issues(input: Record<string, unknown>): { path: string; message: string }[] {
  const result = poolSettingsSchema.safeParse({ ...base, ...input });
  expect(result.success).toBe(false);
  return result.error!.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

describe('pool settings checks across fields', () => {
  it('blame only the field that is wrong', () => {
    expect(issues({ maxRunners: -1 })).toEqual([{ path: 'maxRunners', message: 'Too small: expected number to be >=0' }]);
    expect(issues({ maxRunners: 2, minIdleRunners: -3 })).toEqual([{ path: 'minIdleRunners', message: 'Too small: expected number to be >=0' }]);
    expect(issues({ mode: 'webhooks', scaleSet: { name: 'linux' } }).map((i) => i.path)).toEqual(['mode']);
    expect(issues({ mode: 'scaleSet', scaleSet: { name: 'has space' }, maxRunners: 0 }).map((i) => i.path)).toEqual(['scaleSet.name']);
  });

  it('still speak when the fields they compare are valid', () => {
    expect(issues({ maxRunners: 2, minIdleRunners: 5 })).toEqual([{ path: 'minIdleRunners', message: 'minIdleRunners must not exceed maxRunners' }]);
    expect(issues({ scaleSet: { name: 'linux' } })).toEqual([{ path: 'scaleSet', message: 'scaleSet settings need mode: scaleSet' }]);
    expect(issues({ mode: 'scaleSet', scaleSet: { name: 'linux', minRunners: 4 }, maxRunners: 3 })).toEqual([
      { path: 'scaleSet.minRunners', message: 'scaleSet.minRunners must not exceed maxRunners' },
    ]);
    expect(issues({ mode: 'scaleSet', ephemeral: false })).toEqual([{ path: 'ephemeral', message: 'scale set runners are always ephemeral' }]);
  });

  it('are not hidden by a mistake in another field', () => {
    expect(issues({ labels: [], maxRunners: 2, minIdleRunners: 5 }).map((i) => i.path)).toEqual(['labels', 'minIdleRunners']);
  });
});
