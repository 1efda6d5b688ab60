/**
 * Replaying histories recorded with older code against today's workflow bundle.
 *
 * Recordings are the protobuf object form of a history (`History.toObject` with longs, enums and
 * bytes as strings): the SDK's `historyFromJSON` cannot read the CLI's JSON in this install, its
 * protobuf runtime being another copy than the one the history types come from. To record one,
 * run the scenario on the code from before the change (a `git worktree` of it) and write
 * `History.toObject(History.fromObject(await handle.fetchHistory()), { longs: String, enums:
 * String, bytes: String })` as JSON into the test's `histories/` folder.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { lifecycleSinks } from '../../worker/lifecycle-metrics';

export const History = temporal.api.history.v1.History;
export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payload = temporal.api.common.v1.IPayload;

export const loadHistory = (dir: string, file: string) => History.fromObject(JSON.parse(readFileSync(join(dir, 'histories', file), 'utf8')));

/** Resolves when today's code issues the recorded commands for the recorded events; rejects with the nondeterminism otherwise. */
export function replayHistory(history: temporal.api.history.v1.IHistory, workflowId: string): Promise<void> {
  // Replay workers log every state change at INFO; only warnings and worse matter here.
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN') });
  // The production worker's sinks: without them a replayed runner logs an unregistered-sink error.
  return Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: lifecycleSinks }, history, workflowId);
}

export const payload = <T>(p: Payload | null | undefined): T => defaultPayloadConverter.fromPayload<T>(p!);

/** The workflow's input, from its first event. */
export const inputOf = <T>(events: HistoryEvent[]): T => payload<T>(events[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]);

/** The patches the recorded code took: a recording that holds the one under test does not exercise the old path. */
export const patchIds = (events: HistoryEvent[]): string[] =>
  events
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => payload<{ id: string }>(e.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0]).id);

/** The activities the workflow ran, ordinary and local, by type, with the event that records each. */
export function activitySteps(events: HistoryEvent[]): { eventId: number; type: string }[] {
  return events.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) return [{ eventId: Number(e.eventId), type: scheduled }];
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    return [{ eventId: Number(e.eventId), type: payload<{ activity_type: string }>(marker.details!['data']!.payloads![0]).activity_type }];
  });
}
