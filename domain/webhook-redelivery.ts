/**
 * Which failed webhook deliveries to ask GitHub for again, and when. GitHub never
 * retries a delivery by itself: one that found the API down, restarting or too slow
 * (GitHub waits 10 s) is lost unless someone asks for it again, and a lost `queued`
 * leaves its job without a runner, a lost `completed` leaves a runner counted busy.
 * GitHub keeps every attempt of the last three days and sends one again on request.
 *
 * Free of I/O so the rules can be read and tested in one place; the activity lists
 * the attempts and makes the calls.
 */
import type { HookScope, ScopeWebhook, WebhookDelivery } from '../github/port';

/** The events the intake acts on: only these are worth asking for again. */
export const REDELIVERED_EVENTS: readonly string[] = ['workflow_job'];

/** Deliveries followed at once; beyond this the oldest are given up (an outage of days, or a receiver that always refuses). */
const MAX_FAILING = 1_000;

export interface RedeliveryOptions {
  /** A failed delivery is asked for again this long after it failed, then doubling. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** Redeliveries asked for per delivery before giving it up. */
  maxAttempts: number;
}

export interface FailingDelivery {
  guid: string;
  /** The newest failed attempt: what a redelivery names. */
  attemptId: number;
  event: string;
  action: string | null;
  firstFailedAt: string;
  /** Redeliveries asked for so far. */
  redeliveries: number;
  /** Epoch ms when it is next asked for. */
  nextAt: number;
}

/**
 * Older attempts a listing left unread when it reached its page bound (a busy
 * organisation's minute can hold more deliveries than a pass reads): later passes
 * read on from `cursor` until they reach `untilId` (or, on a first look, `sinceMs`).
 */
export interface ListingGap {
  cursor: string;
  untilId?: number;
  sinceMs?: number;
  /** Passes in a row whose reading on from `cursor` failed. */
  failures?: number;
}

/** One webhook's deliveries as a pass leaves them. */
export interface DeliveryStreamState {
  /** The newest attempt already looked at: the next pass reads only newer ones. */
  newestId?: number;
  failing: FailingDelivery[];
  /** Oldest first. */
  gaps?: ListingGap[];
}

/** A repository's or organisation's webhook that delivers to runnerflow (token credentials). */
export interface HookStreamState extends DeliveryStreamState {
  scope: HookScope;
  hookId: number;
}

/**
 * Carried from one pass to the next (the schedule hands each run the last one's result).
 * For App credentials the top level is the App's webhook; for token credentials `hooks`
 * holds one stream per webhook found on the scopes of their pools.
 */
export interface RedeliveryState extends DeliveryStreamState {
  hooks?: {
    /** When the pools' scopes and their webhooks were last listed (epoch ms). */
    listedAt: number;
    streams: HookStreamState[];
  };
}

/**
 * Whether a repository's or organisation's webhook is runnerflow's: active, sending
 * `workflow_job`, and delivering to runnerflow's own URL. Another webhook on the same
 * repository (a chat integration, a second runnerflow installation) is not ours to send again.
 */
export function isRunnerflowHook(hook: ScopeWebhook, webhookUrl: string): boolean {
  if (!hook.active || !hook.url) return false;
  if (!hook.events.includes('workflow_job') && !hook.events.includes('*')) return false;
  return sameUrl(hook.url, webhookUrl);
}

function sameUrl(a: string, b: string): boolean {
  try {
    const strip = (u: string): string => {
      const url = new URL(u);
      url.hash = '';
      return url.href.replace(/\/+$/, '');
    };
    return strip(a) === strip(b);
  } catch {
    return false;
  }
}

const succeeded = (d: WebhookDelivery): boolean => d.statusCode >= 200 && d.statusCode < 300;

/**
 * Folds attempts not seen before into the state, oldest first: a delivery that
 * succeeded (at last) is no longer followed; a failed one is, from its newest attempt.
 * Returns the deliveries given up because too many were followed.
 */
export function absorbAttempts(state: DeliveryStreamState, attempts: readonly WebhookDelivery[], options: RedeliveryOptions): { state: DeliveryStreamState; dropped: FailingDelivery[] } {
  const failing = new Map(state.failing.map((f) => [f.guid, { ...f }]));
  let newestId = state.newestId;
  for (const attempt of [...attempts].sort((a, b) => a.id - b.id)) {
    if (newestId === undefined || attempt.id > newestId) newestId = attempt.id;
    if (succeeded(attempt)) {
      failing.delete(attempt.guid);
      continue;
    }
    if (!REDELIVERED_EVENTS.includes(attempt.event)) continue;
    const known = failing.get(attempt.guid);
    if (known) {
      // A redelivery that failed too: the next one is already timed by the backoff.
      if (attempt.id > known.attemptId) known.attemptId = attempt.id;
      continue;
    }
    failing.set(attempt.guid, {
      guid: attempt.guid,
      attemptId: attempt.id,
      event: attempt.event,
      action: attempt.action,
      firstFailedAt: attempt.deliveredAt,
      redeliveries: 0,
      nextAt: Date.parse(attempt.deliveredAt) + options.firstDelayMs,
    });
  }
  const all = [...failing.values()].sort((a, b) => a.attemptId - b.attemptId);
  const dropped = all.splice(0, Math.max(0, all.length - MAX_FAILING));
  return { state: { ...(newestId !== undefined ? { newestId } : {}), failing: all, ...(state.gaps?.length ? { gaps: state.gaps } : {}) }, dropped };
}

/** Deliveries due for a redelivery now, and those that have had all theirs. */
export function dueDeliveries(state: DeliveryStreamState, now: number, options: RedeliveryOptions): { due: FailingDelivery[]; givenUp: FailingDelivery[] } {
  const due: FailingDelivery[] = [];
  const givenUp: FailingDelivery[] = [];
  for (const f of state.failing) {
    if (f.nextAt > now) continue;
    if (f.redeliveries >= options.maxAttempts) givenUp.push(f);
    else due.push(f);
  }
  return { due, givenUp };
}

/** When a delivery just asked for again is next due, should that attempt fail too. */
export function nextAttemptAt(redeliveries: number, now: number, options: RedeliveryOptions): number {
  return now + Math.min(options.maxDelayMs, options.firstDelayMs * 2 ** redeliveries);
}
