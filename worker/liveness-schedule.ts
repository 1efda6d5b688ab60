/**
 * Two schedules per configured provider run the liveness checks: `liveness/<provider>`
 * (one provider ListInstances per pass) and `liveness/<provider>/github` (one
 * paginated list-runners per GitHub scope per pass, at a slower pace to spare the
 * rate limit). Separate schedules keep each pass stateless and visible on its own.
 */
import type { Client } from '@temporalio/client';
import type { LivenessArgs } from '../activities/liveness-activities';
import type { RunnerflowConfig } from '../config/schema';
import { LIVENESS_CHECK_WORKFLOW } from '../workflows/liveness-check';
import { ensureSchedule, pauseSchedule, type ScheduleChange } from './schedules';

export interface LivenessScheduleResult {
  provider: string;
  scheduleId: string;
  change: ScheduleChange;
}

export const livenessScheduleId = (provider: string, check: LivenessArgs['check']): string =>
  check === 'machines' ? `liveness/${provider}` : `liveness/${provider}/github`;

export async function ensureLivenessSchedules(client: Client, config: RunnerflowConfig, taskQueue: string): Promise<LivenessScheduleResult[]> {
  const results: LivenessScheduleResult[] = [];
  const { liveness } = config;
  for (const { name } of config.providers) {
    for (const check of ['machines', 'github'] as const) {
      const scheduleId = livenessScheduleId(name, check);
      if (!liveness.enabled) {
        if (await pauseSchedule(client, scheduleId, 'liveness disabled in the config')) results.push({ provider: name, scheduleId, change: 'paused' });
        continue;
      }
      const intervalMs = check === 'machines' ? liveness.interval : liveness.githubInterval;
      const args: LivenessArgs = { provider: name, check };
      // Jitter never exceeds the interval: a pass must not slip past the next one.
      const jitterMs = Math.min(liveness.jitter, Math.floor(intervalMs / 2));
      const change = await ensureSchedule(client, { scheduleId, intervalMs, jitterMs, workflowType: LIVENESS_CHECK_WORKFLOW, args: [args], taskQueue });
      results.push({ provider: name, scheduleId, change });
    }
  }
  return results;
}
