/**
 * The jobRelay workflow's surface, shared by the workflow, the webhook intake
 * that starts it and the activity that forwards its jobs.
 *
 * A relay holds queued jobs the intake could not hand to their workflow (a
 * pool, or the unmatched record) quickly enough: that workflow was paused (its
 * continue-as-new, a stall of the server), and GitHub's delivery was waiting.
 * The intake answers once the relay has the jobs, and the relay passes them on
 * when the target takes them.
 */
import { defineSignal } from '@temporalio/workflow';
import type { QueuedJob, UnmatchedJob } from './pool-messages';

export const JOB_RELAY_WORKFLOW = 'jobRelay';
/** One relay per slow spell of one target: `jobs/relay/<target workflow id>/<spell>`. */
export const jobRelayWorkflowId = (target: string, spell: string): string => `jobs/relay/${target}/${spell}`;

export type RelayTarget =
  /** A pool: its queued jobs. A pool that has ended meanwhile gets its jobs recorded as unmatched. */
  | { kind: 'pool'; workflowId: string }
  /** The installation's record of jobs no pool could take. */
  | { kind: 'unmatched'; workflowId: string };

export interface JobRelayInput {
  target: RelayTarget;
  /** The relay ends once it has passed everything on and nothing came for this long. */
  idleMs: number;
}

export interface RelayJobsArgs {
  jobs: (QueuedJob | UnmatchedJob)[];
}
export const relayJobsSignal = defineSignal<[RelayJobsArgs]>('relayJobs');

export interface JobRelayResult {
  /** Jobs passed on to the target. */
  forwarded: number;
}

export const RELAY_MESSAGE_DESCRIPTIONS = {
  relayJobs: 'Queued jobs for the relay to pass on to its target. Input: {"jobs": [{"jobId": 1, "labels": ["self-hosted"]}]}',
} as const;
