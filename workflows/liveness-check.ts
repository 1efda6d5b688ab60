/**
 * livenessCheck: one liveness pass over one provider's running instances, started
 * by the schedules `liveness/<provider>` (machines) and `liveness/<provider>/github`.
 * The work is one activity; the workflow makes each pass and its findings visible
 * in the Web UI. A failed pass is not retried for long: the next scheduled one redoes it.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { LivenessActivities, LivenessArgs, LivenessReport } from '../activities/liveness-activities';
import { FAILURE_TYPES } from '../domain/failure-types';

export const LIVENESS_CHECK_WORKFLOW = 'livenessCheck';

const { reconcileLiveness } = proxyActivities<LivenessActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 3, nonRetryableErrorTypes: [FAILURE_TYPES.unknownProvider, 'InvalidLivenessArgs'] },
});

export async function livenessCheck(input: LivenessArgs): Promise<LivenessReport> {
  return reconcileLiveness(input);
}
