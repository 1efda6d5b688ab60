/**
 * A scale-set listener and its pool live for months through continue-as-new, so a worker with
 * new code takes over runs that began under the old code. These replay such runs' histories
 * with today's workflows: a change that issues other commands for the same events, without a
 * `patched` branch, fails here.
 */
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import type { RunnerPoolInput } from '../../workflows/pool-messages';
import type { ScaleSetListenerInput, ScaleSetView } from '../../workflows/scale-set-messages';
import { inputOf, loadHistory, patchIds, payload, replayHistory } from '../support/replay';

const EventType = temporal.api.enums.v1.EventType;

describe('scale-set histories replay with the current code', () => {
  it('a listener refused a session past its history limit (recorded when only a listening one continued as new)', async () => {
    const history = loadHistory(__dirname, 'listener-refused-sessions-before-the-history-bound.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('listener-history-bound-without-session');

    // One run from its start to its end: it never continued as new.
    const limit = inputOf<ScaleSetListenerInput>(events).historyLimit!;
    expect(events[0]!.workflowExecutionStartedEventAttributes!.continuedExecutionRunId).toBeFalsy();
    expect(events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    expect(payload<ScaleSetView>(events.at(-1)!.workflowExecutionCompletedEventAttributes!.result!.payloads![0]).sessionsOpened).toBe(0);
    // Every attempt was refused, and several came after the history passed its limit: each of
    // those is a point where the current code continues as new.
    const attempts = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'openScaleSetSession').map((e) => Number(e.eventId));
    const answers = events
      .filter((e) => attempts.includes(Number(e.activityTaskCompletedEventAttributes?.scheduledEventId)))
      .map((e) => payload<{ outcome: string }>(e.activityTaskCompletedEventAttributes!.result!.payloads![0]).outcome);
    expect(answers).toEqual(attempts.map(() => 'conflict'));
    expect(attempts.filter((id) => id > limit).length).toBeGreaterThanOrEqual(3);

    await expect(replayHistory(history, 'scaleset/intruder')).resolves.toBeUndefined();
  });

  it("a pool's next run that found the listener an earlier run started (recorded when it sent settings only of a newer version)", async () => {
    const history = loadHistory(__dirname, 'pool-next-run-before-settings-on-each-run.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('listener-settings-on-each-run');

    const started = events[0]!.workflowExecutionStartedEventAttributes!;
    expect(started.initiator).toBe(temporal.api.enums.v1.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW);
    // Settings the earlier run had taken after it started the listener: the current code sends them again.
    expect(inputOf<RunnerPoolInput>(events).carried?.settingsVersion).toBe(2);
    const refused = events.find((e) => e.startChildWorkflowExecutionFailedEventAttributes)?.startChildWorkflowExecutionFailedEventAttributes;
    expect(refused?.workflowType?.name).toBe('scaleSetListener');
    expect(refused?.cause).toBe(temporal.api.enums.v1.StartChildWorkflowExecutionFailedCause.START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_WORKFLOW_ALREADY_EXISTS);
    // The listener heard only the stop, when the pool was deleted.
    const signalled = events.flatMap((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName ?? []);
    expect(signalled).toEqual(['stopListener']);

    await expect(replayHistory(history, 'pool/ss-continued')).resolves.toBeUndefined();
  });

  it('a listener that ended on a call refused for good (recorded when it did not start over)', async () => {
    const history = loadHistory(__dirname, 'listener-ended-on-a-refused-call.json');
    const events = history.events;
    expect(patchIds(events)).toEqual([]);
    const failed = events.find((e) => e.activityTaskFailedEventAttributes)?.activityTaskFailedEventAttributes;
    expect(failed?.failure?.message).toMatch(/runner group/);
    expect(events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED);

    await expect(replayHistory(history, 'scaleset/ss-refused')).resolves.toBeUndefined();
  });

  it('a listener that ended when its session close was refused (recorded when it did not go on to delete the scale set)', async () => {
    const history = loadHistory(__dirname, 'listener-ended-on-a-refused-session-close.json');
    const events = history.events;
    expect(patchIds(events)).toEqual([]);
    const activities = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(activities.at(-1)).toBe('closeScaleSetSession');
    expect(events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED);

    await expect(replayHistory(history, 'scaleset/ss-close-refused')).resolves.toBeUndefined();
  });

  it('a pool deleted while a runner was busy, and its listener that acquired a job after (recorded when the listener was not told)', async () => {
    const pool = loadHistory(__dirname, 'pool-deleted-while-a-runner-was-busy.json');
    expect(patchIds(pool.events)).not.toContain('listener-told-pool-is-deleting');
    const signalled = pool.events.flatMap((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName ?? []);
    expect(signalled.filter((name) => name === 'updateListener' || name === 'stopListener')).toEqual(['stopListener']);
    expect(pool.events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

    const listener = loadHistory(__dirname, 'listener-of-a-pool-deleted-while-a-runner-was-busy.json');
    const events = listener.events;
    expect(patchIds(events)).toEqual([]);
    // Reports to the pool named no listener; two jobs were acquired, the second after the pool's deletion.
    const reports = events.flatMap((e) => {
      const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
      return a?.signalName === 'scaleSetDemand' ? [payload<Record<string, unknown>>(a.input!.payloads![0])] : [];
    });
    expect(reports.length).toBeGreaterThan(1);
    expect(reports.every((r) => !('listener' in r))).toBe(true);
    const acquired = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'acquireScaleSetJobs');
    expect(acquired).toHaveLength(2);
    const done = payload<ScaleSetView>(events.at(-1)!.workflowExecutionCompletedEventAttributes!.result!.payloads![0]);
    expect(done).toMatchObject({ status: 'stopped', jobsAcquired: 2 });

    await expect(replayHistory(pool, 'pool/ss-deleted-busy')).resolves.toBeUndefined();
    await expect(replayHistory(listener, 'scaleset/ss-deleted-busy')).resolves.toBeUndefined();
  });

  it('a pool sent a new scale set name by hand, and its listener sent one as pools now send it (recorded when the pool refused it and the listener ignored it)', async () => {
    const pool = loadHistory(__dirname, 'pool-renamed-by-signal-before-renaming.json');
    expect(patchIds(pool.events)).not.toContain('scale-set-renamed-in-place');
    const updates = pool.events.flatMap((e) => {
      const a = e.workflowExecutionSignaledEventAttributes;
      return a?.signalName === 'updatePool' ? [payload<{ settings: { scaleSet?: { name?: string }; maxRunners: number } }>(a.input!.payloads![0]).settings] : [];
    });
    expect(updates.map((u) => [u.scaleSet?.name, u.maxRunners])).toEqual([['renamed-by-hand', 2], [undefined, 3]]);
    // Refused: the memo, upserted for each settings change taken, never named the new scale set.
    const memoNames = pool.events.flatMap((e) => {
      const set = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.['scaleSet'];
      return set ? [payload<{ name: string }>(set).name] : [];
    });
    expect(memoNames.length).toBeGreaterThan(0);
    expect(memoNames.every((name) => name !== 'renamed-by-hand')).toBe(true);

    const listener = loadHistory(__dirname, 'listener-told-a-name-before-renaming.json');
    const events = listener.events;
    expect(patchIds(events)).not.toContain('listener-renames-its-scale-set');
    const named = events.flatMap((e) => {
      const a = e.workflowExecutionSignaledEventAttributes;
      return a?.signalName === 'updateListener' ? [payload<{ name?: string }>(a.input!.payloads![0]).name] : [];
    });
    expect(named).toContain('renamed-by-pool');
    // It neither renamed the scale set nor continued as new for it.
    expect(events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [])).not.toContain('renameScaleSet');
    expect(events.at(-1)!.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

    await expect(replayHistory(pool, 'pool/ss-renamed-by-hand')).resolves.toBeUndefined();
    await expect(replayHistory(listener, 'scaleset/ss-told-a-name')).resolves.toBeUndefined();
  });
});
