/**
 * More delivery attempts than one pass reads (20 pages of 100): the attempts a pass did not
 * reach are read by the next passes, not skipped, on a real worker.
 */
import { describe, expect, it } from 'vitest';
import { createWebhookRedeliveryActivities, type RedeliveryArgs, type RedeliveryReport } from '../../activities/webhook-redelivery-activities';
import type { WebhookDeliveriesPort, WebhookDelivery } from '../../github/port';
import { WEBHOOK_REDELIVERY_WORKFLOW } from '../../workflows/webhook-redelivery';
import { uniqueName, useTestWorker } from '../support/temporal';

const PAGE = 100;

/** An App webhook's attempts, newest first, paged by `v1_<id>` cursors as GitHub does; failing ones by GUID. */
class DeliveriesDouble implements WebhookDeliveriesPort {
  readonly attempts: WebhookDelivery[] = [];
  readonly redelivered: string[] = [];
  refuseCursors = false;
  pagesRead = 0;

  add(count: number, failingGuids: Record<number, string> = {}): void {
    for (let i = 0; i < count; i++) {
      const id = this.attempts.length + 1;
      const guid = failingGuids[id] ?? `ok-${id}`;
      this.attempts.push({ id, guid, deliveredAt: new Date(Date.now() - 60_000).toISOString(), redelivery: false, statusCode: failingGuids[id] ? 0 : 200, event: 'workflow_job', action: 'queued' });
    }
  }

  async listWebhookDeliveries(req: { cursor?: string }) {
    this.pagesRead += 1;
    if (req.cursor && this.refuseCursors) throw new Error('GitHub answered 422: the cursor is not valid');
    const before = req.cursor ? Number(req.cursor.slice(3)) : Infinity;
    const older = this.attempts.filter((a) => a.id < before).reverse();
    const page = older.slice(0, PAGE);
    return { deliveries: page, ...(older.length > PAGE ? { nextCursor: `v1_${page.at(-1)!.id}` } : {}) };
  }

  async redeliverWebhook(attemptId: number) {
    const attempt = this.attempts.find((a) => a.id === attemptId)!;
    this.redelivered.push(attempt.guid);
    this.attempts.push({ ...attempt, id: this.attempts.length + 1, redelivery: true, statusCode: 200 });
    return 'redelivered' as const;
  }
}

const ports = new Map<string, DeliveriesDouble>();
const env = useTestWorker({ extraActivities: createWebhookRedeliveryActivities({ hooks: (credentials) => ports.get(credentials)! }) });

function passes(port: DeliveriesDouble) {
  const credentials = uniqueName('app');
  ports.set(credentials, port);
  const args: RedeliveryArgs = { credentials, lookbackMs: 3_600_000, firstDelayMs: 1_000, maxDelayMs: 60_000, maxAttempts: 5 };
  return (state?: RedeliveryReport['state']): Promise<RedeliveryReport> =>
    env.client.workflow.execute(WEBHOOK_REDELIVERY_WORKFLOW, { taskQueue: env.w.taskQueue, workflowId: uniqueName('redelivery'), args: [{ ...args, ...(state ? { state } : {}) }] });
}

describe('a webhook with more attempts than a pass reads', () => {
  it('reads the older attempts in the next pass, and asks for the failed ones among them again', async () => {
    const github = new DeliveriesDouble();
    github.add(2_550, { 5: 'old-failure', 2_540: 'new-failure' });
    const pass = passes(github);

    const first = await pass();
    expect(first.examined).toBe(2_000);
    expect(github.pagesRead).toBe(20);
    expect(first.redelivered).toEqual(['new-failure']);
    expect(first.truncated).toBe(true);
    expect(first.state.gaps).toEqual([{ cursor: 'v1_551', sinceMs: expect.any(Number) }]);

    // The next pass reads what came since (the redelivery), then the 550 attempts the first did not reach.
    const second = await pass(first.state);
    expect(second.examined).toBe(551);
    expect(second.redelivered).toEqual(['old-failure']);
    expect(second.truncated).toBe(false);
    expect(second.state.gaps).toBeUndefined();
    expect(second.failed).toEqual([]);
  });

  it('keeps reading the newest attempts when GitHub refuses a gap, and gives the gap up after three passes', async () => {
    const github = new DeliveriesDouble();
    github.add(2_100);
    const pass = passes(github);
    const first = await pass();
    expect(first.state.gaps).toHaveLength(1);

    github.refuseCursors = true;
    let state = first.state;
    for (const [n, outcome] of [
      [1, 'not read this pass'],
      [2, 'not read this pass'],
      [3, 'given up'],
    ] as const) {
      github.add(1, { [github.attempts.length + 1]: `failure-${n}` });
      const report = await pass(state);
      expect(report.redelivered, `pass ${n + 1}`).toEqual([`failure-${n}`]);
      expect(report.failed).toEqual([{ target: 'older deliveries', error: `${outcome}: GitHub answered 422: the cursor is not valid` }]);
      state = report.state;
    }
    expect(state.gaps).toBeUndefined();
  });
});
