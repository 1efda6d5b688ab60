/**
 * A short digest of a set of names, the same whatever their order: what a pool publishes in its
 * glance so that a reader can tell whether what it knows of the pool is still so without asking.
 *
 * A pool publishes the digest of the runners it counts that have come online, and the liveness
 * passes compute the digest of the runners visibility lists for that pool. When the two agree,
 * every listed runner is one the pool counts and has heard come online, which is all a pass
 * would have asked the pool: the pass need not ask, and a pool the worker does not hold in its
 * cache is not replayed for it. When they differ, the pass asks, as it always did. An
 * organisation or enterprise pool also publishes the digest of the repositories it has lately
 * heard from (each with when), so the sweep asks again only a pool whose list has changed.
 *
 * Two 32-bit FNV-1a hashes per name with different starting values, summed per set: a chance
 * agreement of two different sets is about one in 2^64, and the worst it costs is a look that
 * does not ask a pool (the next, with the pool's glance moved on, does).
 * Plain arithmetic, so workflow code may call it.
 */

const FNV_PRIME = 0x01000193;
const FIRST_BASIS = 0x811c9dc5;
/** Another starting value, so the two hashes of one name are independent enough. */
const SECOND_BASIS = 0x050c5d1f;

function fnv1a(text: string, basis: number): number {
  let hash = basis;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash >>> 0;
}

const hex = (n: number): string => n.toString(16).padStart(8, '0');

export interface NameSetDigest {
  count: number;
  digest: string;
}

/** The digest of a set of names; a name given twice counts twice, so callers pass each name once. */
export function nameSetDigest(names: Iterable<string>): NameSetDigest {
  let count = 0;
  let first = 0;
  let second = 0;
  for (const name of names) {
    count += 1;
    first = (first + fnv1a(name, FIRST_BASIS)) >>> 0;
    second = (second + fnv1a(name, SECOND_BASIS)) >>> 0;
  }
  return { count, digest: hex(first) + hex(second) };
}

export function sameNameSet(a: NameSetDigest | undefined, b: NameSetDigest): boolean {
  return a !== undefined && a.count === b.count && a.digest === b.digest;
}
