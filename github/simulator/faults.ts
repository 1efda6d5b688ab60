/**
 * Fault injection for the simulator: what a request or a webhook delivery
 * meets instead of the happy path. `times` counts affected requests or
 * deliveries; without it a fault stays until cleared (a primary rate limit
 * lasts until its reset time, as GitHub's does). `forMs` ends a fault after
 * that long even if requests are left: a moment of trouble, not a debt that
 * waits for the next request however late it comes.
 */
import type { ActionsOperationName } from './actions-routes';
import type { OperationName } from './served-operations';

type AnyOperation = OperationName | ActionsOperationName;
type OperationFilter = { operation?: AnyOperation | '*' };
type WebhookFilter = { action?: 'queued' | 'in_progress' | 'completed' };
type Lifetime = { forMs?: number };

export type SimFault = Lifetime &
  (
    | ({ kind: 'latency'; ms: number; times?: number } & OperationFilter)
    | ({ kind: 'server-error'; status?: number; times?: number } & OperationFilter)
    | ({ kind: 'primary-rate-limit'; resetInMs: number; status?: 403 | 429 } & OperationFilter)
    | ({ kind: 'secondary-rate-limit'; retryAfterSeconds?: number | null; status?: 403 | 429; times?: number } & OperationFilter)
    /** `restOfJob`: the job's later events are lost too (a job whose start and end nobody hears of). */
    | ({ kind: 'lose-webhooks'; times?: number; restOfJob?: boolean } & WebhookFilter)
    | ({ kind: 'duplicate-webhooks'; times?: number } & WebhookFilter)
    /** The receiver cannot be reached (an outage, a partition): the attempt is recorded as failed, and can be redelivered. */
    | ({ kind: 'unreachable-webhooks'; times?: number } & WebhookFilter)
    /**
     * The delivery goes out `ms` late, and the same job's later events go ahead of it: GitHub
     * promises no order between deliveries.
     */
    | ({ kind: 'delay-webhooks'; ms: number; times?: number } & WebhookFilter)
    /**
     * Every REST call about this repository (`owner/name`) answers 404 Not Found, as GitHub
     * answers a token that cannot see a private repository: credentials that may manage an
     * enterprise's runners need not read its organisations' repositories.
     */
    | { kind: 'unreadable-repository'; repository: string; times?: number }
    /** Actions service: session creation answers 409 as if another listener held the scale set. */
    | { kind: 'session-conflict'; times?: number }
    /** Actions service: the presented admin or queue token is refused with 401 (it expired). */
    | ({ kind: 'expire-token'; times?: number } & OperationFilter)
    /** Actions service: the scale set's session is dropped before the next long poll answers. */
    | { kind: 'lose-session'; times?: number }
    /** Actions service: the next long poll delivers the newest delivered message again. */
    | { kind: 'redeliver-message'; times?: number }
    /** Actions service: the session expired before it was closed: the close answers 400 RunnerScaleSetSessionExpiredException. */
    | { kind: 'session-expired-on-delete'; times?: number }
    /** Actions service: a job becomes available to its scale set, but the message that offers it is lost (the statistics still count it). */
    | { kind: 'lose-job-offer'; times?: number }
    /** Actions service: a message of a type other than job messages joins the scale set's queue; it stays there until deleted, like any message. */
    | { kind: 'foreign-message'; messageType?: string; times?: number });

type ActiveFault = SimFault & { remaining: number; resetAtEpochSeconds?: number; endsAt?: number };

export const FAULT_KINDS: readonly SimFault['kind'][] = [
  'latency',
  'server-error',
  'primary-rate-limit',
  'secondary-rate-limit',
  'lose-webhooks',
  'duplicate-webhooks',
  'unreachable-webhooks',
  'delay-webhooks',
  'unreadable-repository',
  'session-conflict',
  'expire-token',
  'lose-session',
  'redeliver-message',
  'session-expired-on-delete',
  'lose-job-offer',
  'foreign-message',
];

export class FaultPlan {
  private faults: ActiveFault[] = [];

  add(fault: SimFault): void {
    const remaining = 'times' in fault && fault.times !== undefined ? fault.times : Infinity;
    const active: ActiveFault = { ...fault, remaining, ...(fault.forMs !== undefined ? { endsAt: Date.now() + fault.forMs } : {}) };
    // GitHub's reset header has second granularity; the limit lifts at that second.
    if (fault.kind === 'primary-rate-limit') active.resetAtEpochSeconds = Math.ceil((Date.now() + fault.resetInMs) / 1000);
    this.faults.push(active);
  }

  clear(): void {
    this.faults = [];
  }

  /** Takes one use of the first matching fault of `kind` for an API operation. */
  forRequest<
    K extends
      | 'latency'
      | 'server-error'
      | 'primary-rate-limit'
      | 'secondary-rate-limit'
      | 'session-conflict'
      | 'expire-token'
      | 'lose-session'
      | 'redeliver-message'
      | 'session-expired-on-delete'
      | 'lose-job-offer'
      | 'foreign-message',
  >(
    kind: K,
    operation: AnyOperation,
  ): (Extract<SimFault, { kind: K }> & { resetAtEpochSeconds?: number }) | undefined {
    this.expire();
    const fault = this.faults.find(
      (f) => f.kind === kind && (!('operation' in f) || !f.operation || f.operation === '*' || f.operation === operation),
    );
    if (!fault) return undefined;
    fault.remaining -= 1;
    return fault as Extract<SimFault, { kind: K }> & { resetAtEpochSeconds?: number };
  }

  /** Whether a call about the repository `owner/name` is refused as if the repository were not there (takes one use). */
  repositoryUnreadable(owner: string, repo: string): boolean {
    this.expire();
    const name = `${owner}/${repo}`.toLowerCase();
    const fault = this.faults.find((f) => f.kind === 'unreadable-repository' && f.repository.toLowerCase() === name);
    if (fault) fault.remaining -= 1;
    return fault !== undefined;
  }

  forWebhook(kind: 'duplicate-webhooks' | 'unreachable-webhooks', action: string): boolean {
    return this.takeWebhookFault(kind, action) !== undefined;
  }

  /** Whether a delivery of `action` is lost, and whether its job's later events go with it. */
  webhookLost(action: string): { restOfJob: boolean } | undefined {
    const fault = this.takeWebhookFault('lose-webhooks', action);
    return fault?.kind === 'lose-webhooks' ? { restOfJob: fault.restOfJob === true } : undefined;
  }

  /** How late a delivery of `action` goes out, when a `delay-webhooks` fault takes it. */
  webhookDelay(action: string): number | undefined {
    const fault = this.takeWebhookFault('delay-webhooks', action);
    return fault?.kind === 'delay-webhooks' ? fault.ms : undefined;
  }

  private takeWebhookFault(kind: 'lose-webhooks' | 'duplicate-webhooks' | 'unreachable-webhooks' | 'delay-webhooks', action: string): ActiveFault | undefined {
    this.expire();
    const fault = this.faults.find((f) => f.kind === kind && (!('action' in f) || !f.action || f.action === action));
    if (fault) fault.remaining -= 1;
    return fault;
  }

  private expire(): void {
    const now = Date.now();
    this.faults = this.faults.filter((f) => f.remaining > 0 && (f.resetAtEpochSeconds === undefined || now / 1000 < f.resetAtEpochSeconds) && (f.endsAt === undefined || now < f.endsAt));
  }
}
