/**
 * One schedule per credentials asks for their failed webhook deliveries again:
 * `redelivery/<credentials>`. An App's deliveries are its own webhook's; token
 * credentials follow the webhooks of their pools' repositories and organisations that
 * deliver to runnerflow's webhook URL, so they need to know that URL.
 */
import type { Client } from '@temporalio/client';
import type { RedeliveryArgs } from '../activities/webhook-redelivery-activities';
import type { RunnerflowConfig } from '../config/schema';
import { WEBHOOK_REDELIVERY_WORKFLOW } from '../workflows/webhook-redelivery';
import { ensureSchedule, pauseSchedule, type ScheduleChange } from './schedules';

export const redeliveryScheduleId = (credentials: string): string => `redelivery/${credentials}`;

/** Where GitHub delivers runnerflow's webhooks: configured, or the API's public URL and the intake's path. */
export function runnerflowWebhookUrl(config: RunnerflowConfig): string | undefined {
  if (config.redelivery.webhookUrl) return config.redelivery.webhookUrl;
  return config.api.publicUrl ? `${config.api.publicUrl.replace(/\/+$/, '')}/webhooks/github` : undefined;
}

export async function ensureRedeliverySchedules(client: Client, config: RunnerflowConfig, taskQueue: string): Promise<{ scheduleId: string; change: ScheduleChange }[]> {
  const results: { scheduleId: string; change: ScheduleChange }[] = [];
  const { redelivery } = config;
  for (const credentials of config.github.credentials) {
    const scheduleId = redeliveryScheduleId(credentials.name);
    const webhookUrl = credentials.auth.type === 'app' ? undefined : runnerflowWebhookUrl(config);
    if (!redelivery.enabled || (credentials.auth.type !== 'app' && !webhookUrl)) {
      const why = redelivery.enabled ? 'token credentials: set redelivery.webhookUrl (or api.publicUrl) to follow the webhooks that deliver there' : 'redelivery disabled in the config';
      if (await pauseSchedule(client, scheduleId, why)) results.push({ scheduleId, change: 'paused' });
      continue;
    }
    const args: Omit<RedeliveryArgs, 'state'> = {
      credentials: credentials.name,
      ...(webhookUrl ? { webhookUrl, hookRefreshMs: redelivery.hookRefresh } : {}),
      lookbackMs: redelivery.lookback,
      firstDelayMs: redelivery.firstDelay,
      maxDelayMs: redelivery.maxDelay,
      maxAttempts: redelivery.maxAttempts,
    };
    const jitterMs = Math.floor(redelivery.interval / 4);
    results.push({ scheduleId, change: await ensureSchedule(client, { scheduleId, intervalMs: redelivery.interval, jitterMs, workflowType: WEBHOOK_REDELIVERY_WORKFLOW, args: [args], taskQueue }) });
  }
  return results;
}
