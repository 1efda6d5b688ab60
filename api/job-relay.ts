/**
 * The way around a pool (or the unmatched record) that does not take a batch
 * of queued jobs in time: a jobRelay workflow takes them instead, one per slow
 * spell of the target, and passes them on when the target takes signals again.
 * Signal-with-start, so every batch of the spell lands in the same relay and the
 * first one starts it.
 */
import type { Client } from '@temporalio/client';
import type { QueuedJob } from '../workflows/pool-messages';
import { JOB_RELAY_WORKFLOW, jobRelayWorkflowId, relayJobsSignal, type JobRelayInput, type RelayTarget } from '../workflows/relay-messages';
import type { Detour } from './signal-batcher';

export interface JobRelaySettings {
  /** How long the target may take before a batch goes through a relay. */
  afterMs: number;
  /** How long a relay with nothing left to pass on waits for more before it ends. */
  idleMs: number;
}

export interface JobRelayHooks {
  relayed?(target: string, jobs: number): void;
  /** The batch then waits for its target after all (api/signal-batcher.ts). */
  failed?(target: string, jobs: number, err: unknown): void;
}

export function jobRelayDetour<T extends QueuedJob>(client: Client, taskQueue: string, kind: RelayTarget['kind'], settings: JobRelaySettings, hooks: JobRelayHooks = {}): Detour<T> {
  return {
    afterMs: settings.afterMs,
    async send(workflowId, jobs, spell) {
      const input: JobRelayInput = { target: { kind, workflowId }, idleMs: settings.idleMs };
      try {
        await client.workflow.signalWithStart(JOB_RELAY_WORKFLOW, {
          workflowId: jobRelayWorkflowId(workflowId, spell),
          taskQueue,
          args: [input],
          signal: relayJobsSignal,
          signalArgs: [{ jobs }],
        });
      } catch (err) {
        hooks.failed?.(workflowId, jobs.length, err);
        throw err;
      }
      hooks.relayed?.(workflowId, jobs.length);
    },
  };
}
