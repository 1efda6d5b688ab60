/**
 * webhookRedelivery: one pass over a credentials' failed webhook deliveries, started
 * by the schedule `redelivery/<credentials>` (or by hand). The work is one activity;
 * the workflow makes each pass and what it asked for again visible in the Web UI.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RedeliveryArgs, RedeliveryReport, WebhookRedeliveryActivities } from '../activities/webhook-redelivery-activities';

export const WEBHOOK_REDELIVERY_WORKFLOW = 'webhookRedelivery';

const { redeliverFailedWebhooks } = proxyActivities<WebhookRedeliveryActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  // The next scheduled pass redoes a failed one from the last completed state.
  retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 3, nonRetryableErrorTypes: ['InvalidRedeliveryArgs'] },
});

export async function webhookRedelivery(input: RedeliveryArgs): Promise<RedeliveryReport> {
  // A scheduled run is handed the last completed run's result: it goes on from where that one stopped.
  // A run started by hand goes on from the state it is given, if any.
  const state = (workflowInfo().lastResult as RedeliveryReport | undefined)?.state ?? input.state;
  return redeliverFailedWebhooks({ ...input, ...(state ? { state } : {}) });
}
