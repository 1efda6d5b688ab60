/**
 * Which of an organisation's repositories a sweep looks into for jobs whose `queued` webhook was
 * lost. GitHub lists queued jobs only per repository, so each one looked into costs calls, and a
 * sweep looks into a bounded number (`sweep.lostJobRepositories`).
 *
 * Two sources name candidates. The repositories the organisation's pools have lately had jobs
 * from find a lost job in a repository that is busy anyway. They miss a repository whose first
 * job for these pools is the lost one, and most runs start from a push: the organisation's
 * repositories most lately pushed to name that one too. Both lists are merged by their latest
 * sign of life (a job heard of, or a push), most recent first, so a repository just pushed to
 * that the pools have not heard from since comes before a busy one whose jobs all arrived.
 */
import type { PushedRepository } from '../github/port';
import type { RecentRepository } from '../workflows/recent-repositories';

/**
 * GitHub cancels a job still queued after a day: a repository last pushed to longer ago than
 * that has no job queued by a push left to find.
 */
export const PUSH_KEEPS_JOBS_QUEUED_MS = 24 * 60 * 60 * 1_000;

/**
 * How long a repository (or organisation) GitHub refused with 404 or 403 is left alone before it
 * is looked into again. It was deleted or renamed since a pool heard from it, or the credentials
 * may not read it (a token that may manage an enterprise's runners need not read its
 * organisations' repositories); asking every sweep would only repeat the refusal. A scope
 * granted later is used within this long.
 */
export const UNREADABLE_LEFT_FOR_MS = 6 * 60 * 60 * 1_000;

/**
 * Of the repositories refused before (`repo:owner/name` → when), those still left alone at `now`.
 * It comes back from the last sweep's result: anything but a time is dropped, so the repository
 * is looked into again rather than left alone for ever.
 */
export function stillUnreadable(refused: Readonly<Record<string, unknown>> | undefined, now: number): Record<string, number> {
  const left: Record<string, number> = {};
  for (const [key, at] of Object.entries(refused ?? {})) {
    if (typeof at === 'number' && Number.isFinite(at) && at <= now && now - at < UNREADABLE_LEFT_FOR_MS) left[key] = at;
  }
  return left;
}

export interface LostJobCandidates {
  /** The organisation (GitHub compares names without case); absent, as for an enterprise's pools, any organisation's. */
  org?: string;
  /** From the pools: `owner/name` and when a job of it was last queued (epoch ms). */
  heard: readonly RecentRepository[];
  /** From GitHub: the organisation's repositories most lately pushed to. */
  pushed: readonly PushedRepository[];
  /** Repositories already looked into this sweep (lower-cased `owner/name`). */
  lookedInto: ReadonlySet<string>;
  now: number;
  count: number;
}

/** `owner/name` of the repositories to look into, most lately active first, at most `count`. */
export function repositoriesToLookInto(c: LostJobCandidates): string[] {
  const org = c.org?.toLowerCase();
  const latest = new Map<string, { repository: string; at: number }>();
  const consider = (repository: string, at: number) => {
    const key = repository.toLowerCase();
    if ((org !== undefined && key.split('/')[0] !== org) || !key.includes('/') || c.lookedInto.has(key) || !Number.isFinite(at)) return;
    const known = latest.get(key);
    if (!known || known.at < at) latest.set(key, { repository, at });
  };
  for (const [repository, at] of c.heard) consider(repository, at);
  for (const { repository, pushedAt } of c.pushed) {
    const at = Date.parse(pushedAt);
    if (c.now - at <= PUSH_KEEPS_JOBS_QUEUED_MS) consider(repository, at);
  }
  return [...latest.values()]
    .sort((a, b) => b.at - a.at || a.repository.localeCompare(b.repository))
    .slice(0, Math.max(0, c.count))
    .map((entry) => entry.repository);
}
