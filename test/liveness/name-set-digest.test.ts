/**
 * The digest a pool publishes of its online runners and a liveness pass computes of the runners
 * it listed: equal for the same names in any order, different when one name differs.
 */
import { describe, expect, it } from 'vitest';
import { nameSetDigest, sameNameSet } from '../../domain/name-set-digest';

const names = Array.from({ length: 200 }, (_, i) => `pool-a-${i.toString(36)}-x7k2`);

describe('a digest of runner names', () => {
  it('is the same for the same names in any order', () => {
    const shuffled = [...names].sort(() => 0.5 - Math.random());
    expect(nameSetDigest(shuffled)).toEqual(nameSetDigest(names));
    expect(sameNameSet(nameSetDigest(names), nameSetDigest(shuffled))).toBe(true);
    expect(nameSetDigest([])).toEqual({ count: 0, digest: '0000000000000000' });
  });

  it('differs when a runner is replaced by another at the same count, added, or taken out', () => {
    const base = nameSetDigest(names);
    const replaced = nameSetDigest([...names.slice(1), 'pool-a-new-runner']);
    expect(replaced.count).toBe(base.count);
    expect(sameNameSet(base, replaced)).toBe(false);
    expect(sameNameSet(base, nameSetDigest([...names, 'pool-a-one-more']))).toBe(false);
    expect(sameNameSet(base, nameSetDigest(names.slice(0, -1)))).toBe(false);
    // Names that differ only in case are different runners to a pool.
    expect(sameNameSet(nameSetDigest(['Runner-1']), nameSetDigest(['runner-1']))).toBe(false);
  });

  it('tells apart every pair among many single-name changes', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5_000; i += 1) seen.add(nameSetDigest([...names.slice(0, 10), `r-${i}`]).digest);
    expect(seen.size).toBe(5_000);
  });

  it('is never vouched for by a missing digest', () => {
    expect(sameNameSet(undefined, nameSetDigest(names))).toBe(false);
  });
});
