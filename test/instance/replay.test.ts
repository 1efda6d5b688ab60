/**
 * A runner lives as long as its machine and its job, so a worker with new code takes over
 * runners whose history began under the old code. These replay such histories with today's
 * workflows: a change that issues other commands for the same events, without a `patched`
 * branch, fails here.
 */
import { describe, expect, it } from 'vitest';
import type { InstanceState } from '../../workflows/messages';
import { activitySteps, inputOf, loadHistory, patchIds, payload, replayHistory } from '../support/replay';

describe('runnerInstance histories replay with the current code', () => {
  it('an idle runner one listing called dead while GitHub said busy (recorded before the second look at its machine)', async () => {
    const history = loadHistory(__dirname, 'busy-runner-listed-dead-before-the-second-look.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('second-look-when-a-dead-machine-is-busy');

    const report = events.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'healthReport');
    expect(payload<{ finding: string }>(report!.workflowExecutionSignaledEventAttributes!.input!.payloads![0]).finding).toBe('machine_stopped');
    // After the report: GitHub's busy answer, then straight to the delete. The current code
    // looks at the machine between the two.
    const after = activitySteps(events).filter((s) => s.eventId > Number(report!.eventId));
    expect(after.map((s) => s.type)).toEqual(['removeGitHubRunner', 'deleteInstanceInline', 'deleteInstance']);
    const unregistered = events.find((e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === after[0]!.eventId);
    expect(payload<string>(unregistered!.activityTaskCompletedEventAttributes!.result!.payloads![0])).toBe('busy');
    const completed = events.at(-1)!.workflowExecutionCompletedEventAttributes;
    expect(payload<InstanceState>(completed!.result!.payloads![0]).status).toBe('deleted');

    await expect(replayHistory(history, 'runner/listing-lied')).resolves.toBeUndefined();
  });

  it('a busy ephemeral runner told GitHub no longer lists it while it waited to leave (recorded before it heeded that)', async () => {
    const history = loadHistory(__dirname, 'busy-ephemeral-told-runner-missing-before-it-was-heeded.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('leaving-ephemeral-runner-heeds-github');
    const signals = events.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName).filter(Boolean);
    // The report came while it waited, and the old code went on waiting for the completed webhook.
    expect(signals.indexOf('healthReport')).toBeGreaterThan(signals.indexOf('delete'));
    expect(signals.indexOf('jobCompleted')).toBeGreaterThan(signals.indexOf('healthReport'));
    await expect(replayHistory(history, 'runner/lost-completed')).resolves.toBeUndefined();
  });

  it('a static runner asked to leave twice, taking job after job while GitHub called it busy (recorded before it continued as new there, or answered a second ask)', async () => {
    const history = loadHistory(__dirname, 'static-runner-leaving-for-long-before-it-continued-as-new.json');
    const events = history.events;
    const patches = patchIds(events);
    expect(patches).not.toContain('leaving-runner-continues-as-new');
    expect(patches).not.toContain('repeated-ask-to-leave-reported-again');
    const input = inputOf<{ historyLimit: number }>(events);
    // One history well past its limit, and two asks to leave.
    expect(events.length).toBeGreaterThan(input.historyLimit * 2);
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'delete')).toHaveLength(2);
    await expect(replayHistory(history, 'runner/leaving-for-long')).resolves.toBeUndefined();
  });

  it("a static runner whose last job's completed event came after its next job started (recorded before that event was ignored)", async () => {
    const history = loadHistory(__dirname, 'static-runner-late-completion-before-it-was-ignored.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('late-completion-of-an-earlier-job-ignored');
    const signals = events.map((e) => e.workflowExecutionSignaledEventAttributes).filter((a) => a !== undefined && a !== null);
    const jobs = signals.filter((a) => a.signalName!.startsWith('job')).map((a) => `${a.signalName}:${payload<{ jobId: number }>(a.input!.payloads![0]).jobId}`);
    expect(jobs).toEqual(['jobStarted:1', 'jobStarted:2', 'jobCompleted:1', 'jobCompleted:2']);
    await expect(replayHistory(history, 'runner/late-completion')).resolves.toBeUndefined();
  });

  it('an ephemeral runner that told its pool it was leaving before its inline delete (recorded before that report waited for the delete)', async () => {
    const history = loadHistory(__dirname, 'ephemeral-runner-reported-leaving-before-its-inline-delete.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('ephemeral-runner-reports-deleted-without-leaving');
    const completedAt = Number(events.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'jobCompleted')!.eventId);
    // After the job's end: busy and leaving side by side with the inline delete, then deleted.
    // The current code holds leaving back until the delete's outcome is known.
    const after = activitySteps(events).filter((s) => s.eventId > completedAt);
    expect(after.map((s) => s.type)).toEqual(['reportToPool', 'reportToPool', 'deleteInstanceInline', 'reportToPool']);
    await expect(replayHistory(history, 'runner/ephemeral-told-pool')).resolves.toBeUndefined();
  });

  it('a runner that created and deleted its machine in its first task (recorded before the create was recorded first)', async () => {
    const history = loadHistory(__dirname, 'runner-created-and-deleted-its-machine-in-one-task-before-the-create-was-recorded-first.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('inline-create-recorded-before-its-delete');
    // One task: the create, the delete and the close, with no timer between. The current code ends
    // the task with a timer after the create.
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect(activitySteps(events).map((s) => s.type)).toEqual(['createInstanceInline', 'deleteInstanceInline']);
    expect(events.some((e) => e.timerStartedEventAttributes)).toBe(false);
    await expect(replayHistory(history, 'runner/created-and-deleted-in-one-task')).resolves.toBeUndefined();
  });

  it('a runner whose forced delete told its pool after the forced step (recorded before the report went beside it)', async () => {
    const history = loadHistory(__dirname, 'forced-runner-reported-after-its-forced-step.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('forced-delete-reports-deleted-at-once');
    const forcedAt = Number(events.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'forceDelete')!.eventId);
    // Leaving, then the forced step, then deleted. The current code says deleted at once, beside the step.
    const after = activitySteps(events).filter((s) => s.eventId > forcedAt);
    expect(after.map((s) => s.type)).toEqual(['reportToPool', 'forceDeleteMachine', 'reportToPool']);
    await expect(replayHistory(history, 'runner/forced-told-pool')).resolves.toBeUndefined();
  });
});
