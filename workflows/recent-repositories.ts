/**
 * The repositories a pool has lately had jobs queued from, bounded. GitHub lists queued jobs only
 * per repository, and an organisation has no listing across its repositories, so the sweep's
 * look for jobs whose `queued` webhook was lost (activities/github-sweep-activities.ts) needs to
 * know where to look for an organisation pool. The repositories that have lately queued jobs for
 * the pool are the ones whose next job it would take: a busy repository that lost one delivery
 * is the common case, and it is found at the next sweep.
 *
 * An enterprise's pool has no webhook a token can read: the organisations of these repositories
 * stand in for it when failed deliveries are asked for again. A scale set's jobs reach its pool
 * with no `queued` webhook, so their starts (as the listener hears them) are recorded too.
 *
 * Kept in the pool's workflow because that is where every queued job arrives anyway: a map
 * update per job, no history event, carried across continue-as-new in a few kilobytes.
 */

/** Repositories kept per pool, the ones queued from least lately going first. */
export const RECENT_REPOSITORIES_KEPT = 100;

/** `owner/name` and the epoch ms of its latest queued job, as carried and as the pool's view lists them. */
export type RecentRepository = [repository: string, lastQueuedAt: number];

export class RecentRepositories {
  /**
   * By lower-cased name (GitHub compares owners and names without case), least lately queued
   * first: a Map keeps insertion order, and a repository queued from again moves to the end.
   */
  private readonly seen = new Map<string, RecentRepository>();

  constructor(carried?: readonly RecentRepository[]) {
    // Carried oldest first; anything malformed is left out rather than failing the pool's task.
    for (const entry of Array.isArray(carried) ? carried : []) {
      if (Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number') this.record(entry[0], entry[1]);
    }
  }

  record(repository: string | undefined, at: number): void {
    if (!repository || !repository.includes('/')) return;
    const key = repository.toLowerCase();
    const known = this.seen.get(key);
    if (known && known[1] > at) return;
    this.seen.delete(key);
    // The spelling last seen is kept.
    this.seen.set(key, [repository, at]);
    if (this.seen.size > RECENT_REPOSITORIES_KEPT) this.seen.delete(this.seen.keys().next().value!);
  }

  /** Least lately queued first, as the next run takes them back. */
  carry(): RecentRepository[] {
    return [...this.seen.values()].map(([repository, at]) => [repository, at]);
  }

  /** Most lately queued first: where a look with a bounded budget starts. */
  newestFirst(): RecentRepository[] {
    return this.carry().reverse();
  }
}
