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
});
