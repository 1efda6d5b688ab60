/**
 * Delivers signed webhooks the way GitHub does: one POST per delivery with a
 * fresh GUID, `X-GitHub-Event`, `X-Hub-Signature-256` (and the legacy SHA-1
 * header), no automatic redelivery. Events of one job go out in the order they
 * happened (queued before in_progress before completed), unless a
 * `delay-webhooks` fault holds one back; different jobs' events go out
 * concurrently, up to `concurrency` at a time, as GitHub's do.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { FaultPlan } from './faults';

export interface WebhookTarget {
  url?: string;
  /** Several receivers (e.g. API processes behind no load balancer): deliveries go round robin. */
  urls?: string[];
  secret?: string;
}

export interface WebhookStats {
  sent: number;
  delivered: number;
  failed: number;
  lost: number;
  duplicated: number;
  /** Held back by a `delay-webhooks` fault, so that their job's later events went first. */
  delayed: number;
  /** Jobs whose events from one on were all lost (`lose-webhooks` with `restOfJob`). */
  jobsSilenced: number;
}

export interface SentDelivery {
  id: string;
  event: string;
  action: string;
  status: number | 'error' | 'lost';
  /** Where it went (absent when lost). */
  url?: string;
}

/** One attempt at a delivery, as GitHub lists it for an App's webhook (`GET /app/hook/deliveries`). */
export interface DeliveryAttempt {
  /** The attempt's own id; redeliveries get new ones, and keep the GUID. */
  id: number;
  guid: string;
  deliveredAt: string;
  redelivery: boolean;
  durationS: number;
  /** 0 when the receiver could not be reached or took longer than GitHub waits. */
  statusCode: number;
  status: string;
  event: string;
  action: string;
  /** The event's repository (`owner/name`), so a repository's or organisation's webhook lists only its own. */
  repository?: string;
  /** Kept so the attempt can be sent again. */
  body: string;
}

function repositoryOf(body: string): { repository?: string } {
  try {
    const name = (JSON.parse(body) as { repository?: { full_name?: unknown } }).repository?.full_name;
    return typeof name === 'string' ? { repository: name } : {};
  } catch {
    return {};
  }
}

export function signWebhookBody(secret: string, body: string): { sha256: string; sha1: string } {
  return {
    sha256: `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    sha1: `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`,
  };
}

export class WebhookSender {
  readonly stats: WebhookStats = { sent: 0, delivered: 0, failed: 0, lost: 0, duplicated: 0, delayed: 0, jobsSilenced: 0 };
  readonly log: SentDelivery[] = [];
  private chain: Promise<void> = Promise.resolve();
  private readonly perKey = new Map<string, Promise<void>>();
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  /** The webhook's id, as GitHub lists it (`x-github-hook-id`). */
  readonly hookId = 400_000_000 + Math.floor(Math.random() * 1_000_000);
  private deliveries = 0;
  /** Failed deliveries, kept so they can be redelivered as GitHub's "redeliver" does. */
  private readonly failedDeliveries = new Map<string, { event: string; action: string; body: string }>();
  /** Every attempt, oldest first (lost deliveries never reached the wire and have none). */
  readonly attempts: DeliveryAttempt[] = [];
  private nextAttemptId = 90_000_000_000;
  /** Jobs whose every later event is lost (`lose-webhooks` with `restOfJob`). */
  private readonly silencedJobs = new Set<string>();

  constructor(
    public target: WebhookTarget,
    private readonly faults: FaultPlan,
    private readonly onError: (message: string) => void,
    private readonly concurrency = 1,
  ) {}

  send(event: string, payload: Record<string, unknown>): void {
    const action = typeof payload.action === 'string' ? payload.action : '';
    const body = JSON.stringify(payload);
    const id = randomUUID();
    this.stats.sent += 1;
    const job = payload.workflow_job as { id?: unknown } | undefined;
    const jobKey = job?.id !== undefined ? String(job.id) : undefined;
    const silenced = jobKey !== undefined && this.silencedJobs.has(jobKey);
    const lost = silenced ? undefined : this.faults.webhookLost(action);
    if (silenced || lost) {
      if (lost?.restOfJob && jobKey !== undefined) {
        this.silencedJobs.add(jobKey);
        this.stats.jobsSilenced += 1;
      }
      this.stats.lost += 1;
      this.log.push({ id, event, action, status: 'lost' });
      return;
    }
    const copies = this.faults.forWebhook('duplicate-webhooks', action) ? 2 : 1;
    if (copies === 2) this.stats.duplicated += 1;
    const unreachable = this.faults.forWebhook('unreachable-webhooks', action);
    const delayMs = this.faults.webhookDelay(action);
    if (delayMs !== undefined) {
      this.stats.delayed += 1;
      // Outside the job's order: the job's later events go out meanwhile and overtake it.
      const late = new Promise<void>((resolve) => setTimeout(resolve, delayMs));
      for (let i = 0; i < copies; i++) {
        const next = late.then(() => this.withSlot(() => this.deliver(id, event, action, body, false, unreachable && i === 0)));
        this.chain = Promise.all([this.chain, next]).then(() => undefined);
      }
      return;
    }
    const key = jobKey !== undefined ? `job:${jobKey}` : 'other';
    for (let i = 0; i < copies; i++) {
      const previous = this.perKey.get(key) ?? Promise.resolve();
      const next = previous.then(() => this.withSlot(() => this.deliver(id, event, action, body, false, unreachable && i === 0)));
      this.perKey.set(key, next);
      void next.finally(() => {
        if (this.perKey.get(key) === next) this.perKey.delete(key);
      });
      this.chain = Promise.all([this.chain, next]).then(() => undefined);
    }
  }

  private async withSlot(work: () => Promise<void>): Promise<void> {
    while (this.inFlight >= this.concurrency) await new Promise<void>((wake) => this.waiting.push(wake));
    this.inFlight += 1;
    try {
      await work();
    } finally {
      this.inFlight -= 1;
      this.waiting.shift()?.();
    }
  }

  /** Resolves once every delivery handed over so far has been attempted. */
  async idle(): Promise<void> {
    let seen: Promise<void> | undefined;
    // Deliveries handed over while waiting extend the chain; wait for those too.
    while (seen !== this.chain) {
      seen = this.chain;
      await seen;
    }
  }

  /** Sends every failed delivery once more (same delivery GUID, as GitHub's redelivery); returns how many. */
  redeliverFailed(): number {
    const failed = [...this.failedDeliveries];
    this.failedDeliveries.clear();
    for (const [id, { event, action, body }] of failed) {
      const next = this.withSlot(() => this.deliver(id, event, action, body, true));
      this.chain = Promise.all([this.chain, next]).then(() => undefined);
    }
    return failed.length;
  }

  /** GitHub's "redeliver" of one attempt (`POST /app/hook/deliveries/{id}/attempts`): false when no such attempt. */
  redeliverAttempt(attemptId: number): boolean {
    const attempt = this.attempts.find((a) => a.id === attemptId);
    if (!attempt) return false;
    this.failedDeliveries.delete(attempt.guid);
    const next = this.withSlot(() => this.deliver(attempt.guid, attempt.event, attempt.action, attempt.body, true));
    this.chain = Promise.all([this.chain, next]).then(() => undefined);
    return true;
  }

  private record(guid: string, event: string, action: string, body: string, redelivery: boolean, startedAt: number, statusCode: number, status: string): void {
    this.attempts.push({
      id: this.nextAttemptId++,
      guid,
      deliveredAt: new Date(startedAt).toISOString(),
      redelivery,
      durationS: (Date.now() - startedAt) / 1000,
      statusCode,
      status,
      event,
      action,
      ...repositoryOf(body),
      body,
    });
  }

  private nextUrl(): string | undefined {
    const { url, urls } = this.target;
    if (!urls || urls.length === 0) return url;
    this.deliveries += 1;
    return urls[this.deliveries % urls.length];
  }

  private async deliver(id: string, event: string, action: string, body: string, redelivery = false, unreachable = false): Promise<void> {
    const { secret } = this.target;
    const url = this.nextUrl();
    if (!url) return;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/simulator',
      'x-github-delivery': id,
      'x-github-event': event,
      'x-github-hook-id': String(this.hookId),
      'x-github-hook-installation-target-type': 'repository',
    };
    if (secret) {
      const signature = signWebhookBody(secret, body);
      headers['x-hub-signature-256'] = signature.sha256;
      headers['x-hub-signature'] = signature.sha1;
    }
    const startedAt = Date.now();
    try {
      // GitHub gives up on a receiver after 10 seconds.
      if (unreachable) throw new Error(`connect ECONNREFUSED ${new URL(url).host} (fault: unreachable-webhooks)`);
      const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      this.log.push({ id, event, action, status: res.status, url });
      this.record(id, event, action, body, redelivery, startedAt, res.status, res.ok ? 'OK' : `Invalid HTTP Response: ${res.status}`);
      if (res.ok) this.stats.delivered += 1;
      else {
        this.stats.failed += 1;
        this.failedDeliveries.set(id, { event, action, body });
        this.onError(`webhook ${event}/${action} delivery ${id} answered ${res.status}`);
      }
    } catch (err) {
      this.stats.failed += 1;
      this.failedDeliveries.set(id, { event, action, body });
      this.log.push({ id, event, action, status: 'error', url });
      this.record(id, event, action, body, redelivery, startedAt, 0, (err as Error).name === 'TimeoutError' ? 'timed out' : 'failed to connect to host');
      this.onError(`webhook ${event}/${action} delivery ${id} failed: ${(err as Error).message}`);
    }
  }
}
