/**
 * A pool looks for runners whose workflow ended without telling it, runners whose report of
 * coming up was lost, and (a scale-set pool) a listener that no longer runs
 * (activities/pool-audit-activities.ts). On its own timer alone, every pool woke every
 * `poolAuditInterval` to find, nearly always, nothing; with hundreds of pools, and a worker
 * whose cache cannot hold them all replaying each one, that was most of what an idle worker did.
 *
 * The liveness machine pass already lists every open runner of its provider and every pool's
 * glance. Compared, the two tell a pool that may have something to find from one that has not,
 * so the pass asks only the former to look (`auditPool`): a few visibility listings per pass
 * (runners, pools, listeners) however many pools, and the pools' own timers can be a slow backstop. For each pool whose
 * glance has the digest of the runners it counts as existing (`started`), the pass compares:
 *
 * - that digest with the digest of the pool's open runners as listed: a runner that ended
 *   unreported is listed no more (and one the pool does not count is listed more);
 * - how many of its runners the pool counts as `running` with how many are listed so: a runner
 *   whose report of coming up was lost is listed running while the pool counts it as starting;
 * - for a scale-set pool that is not being deleted, whether its listener runs.
 *
 * A pool in the middle of a change disagrees for a moment (a start visibility does not show
 * yet, a glance held back by `poolGlanceInterval`). Only the same disagreement on two passes in
 * a row gets an ask, and the same one again only every `askIntervalMs`: a disagreement the
 * pool's look does not resolve (a runner it does not count, a busy runner whose workflow ended)
 * costs a look per interval, as the pool's own timer did.
 */
import { nameSetDigest, sameNameSet } from '../domain/name-set-digest';
import type { PoolGlance } from '../workflows/pool-messages';

export interface PoolAsListed {
  glance: PoolGlance;
  /** The open runner workflows the pool started, as visibility lists them. */
  open: readonly string[];
  /** How many of them visibility lists as `running`. */
  listedRunning: number;
  /** Whether its scale set's listener runs; undefined for a pool that needs none. */
  listenerRuns?: boolean;
}

export interface Disagreement {
  /** The same for the same disagreement seen again. */
  key: string;
  /** What the pool is told, for its log. */
  why: string;
}

/** What the listing shows that the pool's glance does not; undefined when they agree or the glance predates the digest. */
export function poolDisagreement({ glance, open, listedRunning, listenerRuns }: PoolAsListed): Disagreement | undefined {
  if (!glance.started) return undefined;
  const listed = nameSetDigest(open);
  const counted = glance.statuses.running ?? 0;
  const whys: string[] = [];
  if (!sameNameSet(glance.started, listed)) whys.push(`${listed.count} open runner workflow(s) listed against ${glance.started.count} the pool counts`);
  if (listedRunning > counted) whys.push(`${listedRunning} runner(s) listed running against ${counted} the pool counts as running`);
  if (listenerRuns === false) whys.push('its scale set listener is not running');
  if (whys.length === 0) return undefined;
  return { key: [glance.started.digest, listed.digest, counted, listedRunning, listenerRuns ?? '-'].join('|'), why: whys.join('; ') };
}

/** Which pools to ask, pass after pass: the memory of one provider's passes on this worker. */
export class PoolLookRequests {
  private readonly seen = new Map<string, { key: string; askedAt?: number }>();

  constructor(private readonly askIntervalMs: number) {}

  /**
   * The pools to ask now, of this pass's disagreements. A pool that agrees, or that the pass did
   * not look at, is forgotten. Kept in memory: a pass that runs on another worker, or after a
   * restart, sees each disagreement for the first time, which costs one pass of delay.
   */
  toAsk(disagreements: ReadonlyMap<string, Disagreement>, now: number): { pool: string; why: string }[] {
    const asks: { pool: string; why: string }[] = [];
    for (const [pool, { key, why }] of disagreements) {
      const before = this.seen.get(pool);
      if (!before || before.key !== key) {
        this.seen.set(pool, { key });
        continue;
      }
      if (before.askedAt !== undefined && now - before.askedAt < this.askIntervalMs) continue;
      before.askedAt = now;
      asks.push({ pool, why });
    }
    for (const pool of [...this.seen.keys()]) if (!disagreements.has(pool)) this.seen.delete(pool);
    return asks;
  }
}
