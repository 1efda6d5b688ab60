/**
 * The repositories a pool has lately had jobs queued from: bounded, most lately first, one entry
 * per repository whatever its spelling, and carried across continue-as-new as it was.
 */
import { describe, expect, it } from 'vitest';
import { RECENT_REPOSITORIES_KEPT, RecentRepositories, type RecentRepository } from '../../workflows/recent-repositories';

describe('RecentRepositories', () => {
  it('lists the most lately queued first, a repository queued from again moving to the front', () => {
    const recent = new RecentRepositories();
    recent.record('acme/api', 1);
    recent.record('acme/web', 2);
    recent.record('acme/api', 3);
    expect(recent.newestFirst()).toEqual([['acme/api', 3], ['acme/web', 2]]);
  });

  it('keeps one entry per repository without regard to case, in the spelling last seen, and never goes back in time', () => {
    const recent = new RecentRepositories();
    recent.record('Acme/API', 5);
    recent.record('acme/api', 6);
    recent.record('ACME/api', 4);
    expect(recent.newestFirst()).toEqual([['acme/api', 6]]);
  });

  it('ignores what names no repository', () => {
    const recent = new RecentRepositories();
    for (const repository of [undefined, '', 'acme']) recent.record(repository, 1);
    expect(recent.newestFirst()).toEqual([]);
  });

  it(`keeps the ${RECENT_REPOSITORIES_KEPT} most lately queued from`, () => {
    const recent = new RecentRepositories();
    for (let i = 0; i < RECENT_REPOSITORIES_KEPT + 20; i++) recent.record(`acme/repo-${i}`, i);
    const kept = recent.newestFirst();
    expect(kept).toHaveLength(RECENT_REPOSITORIES_KEPT);
    expect(kept[0]).toEqual([`acme/repo-${RECENT_REPOSITORIES_KEPT + 19}`, RECENT_REPOSITORIES_KEPT + 19]);
    expect(kept.at(-1)).toEqual(['acme/repo-20', 20]);
  });

  it('is carried across continue-as-new as it was, and a malformed carry is left out rather than failing the pool', () => {
    const recent = new RecentRepositories();
    recent.record('acme/a', 1);
    recent.record('acme/b', 2);
    expect(new RecentRepositories(recent.carry()).newestFirst()).toEqual(recent.newestFirst());
    const broken = [['acme/ok', 7], ['acme/no-time'], [3, 4], 'acme/x', null] as unknown as RecentRepository[];
    expect(new RecentRepositories(broken).newestFirst()).toEqual([['acme/ok', 7]]);
    expect(new RecentRepositories({} as unknown as RecentRepository[]).newestFirst()).toEqual([]);
  });
});
