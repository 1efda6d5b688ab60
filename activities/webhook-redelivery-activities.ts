/**
 * One pass over a GitHub App's recent webhook deliveries: the attempts since the last
 * pass are read (newest first, a page of 100 per call), failed `workflow_job`
 * deliveries are asked for again on a doubling backoff, and the state of those still
 * failing goes back in the result for the next pass. Its cost is one listing call per
 * 100 new attempts and one call per redelivery, whatever the number of runners.
 *
 * Safe to redo: the intake de-duplicates deliveries by GUID, and a pass that fails
 * half-way is followed by one that starts again from the last completed state.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context, log } from '@temporalio/activity';
import { absorbAttempts, dueDeliveries, nextAttemptAt, type FailingDelivery, type RedeliveryOptions, type RedeliveryState } from '../domain/webhook-redelivery';
import type { WebhookDeliveriesPort, WebhookDelivery } from '../github/port';
import { toActivityFailure } from './failures';

export interface RedeliveryArgs extends RedeliveryOptions {
  credentials: string;
  /** How far back the first pass (one with no state) looks. */
  lookbackMs: number;
  state?: RedeliveryState;
}

export interface RedeliveryReport {
  credentials: string;
  /** Attempts read this pass. */
  examined: number;
  /** GUIDs asked for again. */
  redelivered: string[];
  /** GUIDs that had all their redeliveries and still failed, or that GitHub no longer has. */
  givenUp: string[];
  /** Deliveries still followed. */
  failing: number;
  /** The listing stopped at its page bound before reaching the last pass's newest attempt. */
  truncated: boolean;
  failed: { target: string; error: string }[];
  state: RedeliveryState;
}

/** Pages read per pass: 2,000 attempts, several minutes of a very busy organisation's webhooks. */
const MAX_PAGES = 20;

export function createWebhookRedeliveryActivities(deps: { hooks?: (credentials: string) => WebhookDeliveriesPort }) {
  async function newAttempts(port: WebhookDeliveriesPort, args: RedeliveryArgs): Promise<{ attempts: WebhookDelivery[]; truncated: boolean }> {
    const since = Date.now() - args.lookbackMs;
    const isNew = (d: WebhookDelivery): boolean => (args.state?.newestId !== undefined ? d.id > args.state.newestId : Date.parse(d.deliveredAt) >= since);
    const attempts: WebhookDelivery[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const { deliveries, nextCursor } = await port.listWebhookDeliveries(cursor ? { cursor } : {});
      Context.current().heartbeat();
      const fresh = deliveries.filter(isNew);
      attempts.push(...fresh);
      // Newest first: a page that reaches what was seen before is the last one needed.
      if (fresh.length < deliveries.length || !nextCursor) return { attempts, truncated: false };
      cursor = nextCursor;
    }
    return { attempts, truncated: true };
  }

  return {
    async redeliverFailedWebhooks(args: RedeliveryArgs): Promise<RedeliveryReport> {
      const port = deps.hooks?.(args.credentials);
      if (!port) throw ApplicationFailure.nonRetryable(`no webhook deliveries for credentials "${args.credentials}" on this worker`, 'InvalidRedeliveryArgs');
      try {
        const { attempts, truncated } = await newAttempts(port, args);
        const { state, dropped } = absorbAttempts(args.state ?? { failing: [] }, attempts, args);
        const report: RedeliveryReport = { credentials: args.credentials, examined: attempts.length, redelivered: [], givenUp: dropped.map((d) => d.guid), failing: 0, truncated, failed: [], state };
        const now = Date.now();
        const { due, givenUp } = dueDeliveries(state, now, args);
        const done = new Set<FailingDelivery>(givenUp);
        for (const f of givenUp) {
          report.givenUp.push(f.guid);
          log.warn('webhook delivery given up after its redeliveries failed', { guid: f.guid, event: f.event, action: f.action, firstFailedAt: f.firstFailedAt, redeliveries: f.redeliveries });
        }
        for (const f of due) {
          try {
            const outcome = await port.redeliverWebhook(f.attemptId);
            Context.current().heartbeat();
            if (outcome === 'gone') {
              done.add(f);
              report.givenUp.push(f.guid);
              log.warn('webhook delivery no longer kept by GitHub; not asked for again', { guid: f.guid, event: f.event, action: f.action, firstFailedAt: f.firstFailedAt });
              continue;
            }
            f.redeliveries += 1;
            f.nextAt = nextAttemptAt(f.redeliveries, now, args);
            report.redelivered.push(f.guid);
            log.info('failed webhook delivery asked for again', { guid: f.guid, event: f.event, action: f.action, redeliveries: f.redeliveries });
          } catch (err) {
            // Left due: the next pass asks again.
            report.failed.push({ target: f.guid, error: err instanceof Error ? err.message : String(err) });
          }
        }
        state.failing = state.failing.filter((f) => !done.has(f));
        report.failing = state.failing.length;
        return report;
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  };
}

export type WebhookRedeliveryActivities = ReturnType<typeof createWebhookRedeliveryActivities>;
