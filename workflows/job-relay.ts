/**
 * jobRelay: passes queued jobs on to a pool (or the unmatched record) that did
 * not take them quickly enough for the webhook's answer to wait
 * (api/signal-batcher.ts says when the intake starts one). Short-lived: one per
 * slow spell of one target, ending once it has passed everything on and has
 * been idle for a while, so it never needs a continue-as-new of its own.
 */
import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { RelayActivities } from '../activities/relay-activities';
import type { QueuedJob, UnmatchedJob } from './pool-messages';
import { queuedJobsArgs } from './signal-input';
import { RELAY_MESSAGE_DESCRIPTIONS, relayJobsSignal, type JobRelayInput, type JobRelayResult } from './relay-messages';

/** Jobs per forwarding call: keeps one signal well inside Temporal's payload limit. */
const FORWARD_BATCH = 500;

/**
 * The jobs were already acknowledged to GitHub: losing them is not an option,
 * so forwarding is retried without an attempt limit, backing off to a ceiling
 * that still brings them over soon after a long pause of the target ends.
 */
const relay = proxyActivities<RelayActivities>({
  startToCloseTimeout: 30_000,
  retry: { initialInterval: 200, backoffCoefficient: 2, maximumInterval: 10_000 },
});

export async function jobRelay(input: JobRelayInput): Promise<JobRelayResult> {
  const pending: (QueuedJob | UnmatchedJob)[] = [];
  setHandler(relayJobsSignal, (args) => {
    pending.push(...queuedJobsArgs('relayJobs', (args as { jobs?: unknown } | undefined)?.jobs));
  }, { description: RELAY_MESSAGE_DESCRIPTIONS.relayJobs });

  let forwarded = 0;
  // A signal that races the closing task is not lost: the server refuses to close
  // a workflow with an unseen signal, and the replayed task forwards it.
  while (await condition(() => pending.length > 0, input.idleMs)) {
    const jobs = pending.splice(0, FORWARD_BATCH);
    await relay.forwardRelayedJobs({ target: input.target, jobs });
    forwarded += jobs.length;
  }
  return { forwarded };
}
