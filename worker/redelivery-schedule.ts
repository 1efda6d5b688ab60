/**
 * One schedule per GitHub App credentials asks for its failed webhook deliveries
 * again: `redelivery/<credentials>`. Token credentials have no such listing (a
 * repository or organisation webhook's deliveries need its hook id), so they get none.
 */
import type { Client } from '@temporalio/client';
import type { RedeliveryArgs } from '../activities/webhook-redelivery-activities';
import type { RunnerflowConfig } from '../config/schema';
import { WEBHOOK_REDELIVERY_WORKFLOW } from '../workflows/webhook-redelivery';
import { ensureSchedule, pauseSchedule, type ScheduleChange } from './schedules';

export const redeliveryScheduleId = (credentials: string): string => `redelivery/${credentials}`;

export async function ensureRedeliverySchedules(client: Client, config: RunnerflowConfig, taskQueue: string): Promise<{ scheduleId: string; change: ScheduleChange }[]> {
  const results: { scheduleId: string; change: ScheduleChange }[] = [];
  const { redelivery } = config;
  for (const credentials of config.github.credentials) {
    const scheduleId = redeliveryScheduleId(credentials.name);
    if (!redelivery.enabled || credentials.auth.type !== 'app') {
      const why = redelivery.enabled ? 'credentials are not a GitHub App' : 'redelivery disabled in the config';
      if (await pauseSchedule(client, scheduleId, why)) results.push({ scheduleId, change: 'paused' });
      continue;
    }
    const args: Omit<RedeliveryArgs, 'state'> = {
      credentials: credentials.name,
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
