/**
 * A pool lives for months through continue-as-new, so a worker with new code
 * takes over pools whose current run began under the old code. These replay
 * such a run's history with today's workflows: a change that issues other
 * commands for the same events, without a `patched` branch, fails here.
 */
import { describe, expect, it } from 'vitest';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { loadHistory, patchIds, payload, replayHistory } from '../support/replay';
import { eventually, useTestWorker } from '../support/temporal';
import { poolSettings, startPool } from './helpers';

const env = useTestWorker();

// The first recording is the scenario of the last test below, run on the old code as pool `capped-decisions`.
describe('runnerPool histories replay with the current code', () => {
  it('a pool that waited on a 1 ms timer between capped decisions (recorded before the wait on any wake)', async () => {
    const history = loadHistory(__dirname, 'capped-decisions-before-any-wake.json');
    // The recording does hold the timers the current code no longer starts.
    expect(history.events.filter((e) => e.timerStartedEventAttributes).length).toBeGreaterThan(0);
    await expect(replayHistory(history, 'pool/capped-decisions')).resolves.toBeUndefined();
  });

  it('a pool past 500 events (recorded when a pool continued as new only at 4,000)', async () => {
    const history = loadHistory(__dirname, 'pool-past-500-events-before-the-short-history.json');
    expect(history.events.length).toBeGreaterThan(600);
    // A decision came after event 500, where a pool started today continues as new.
    const lastStart = history.events.map((e) => Number(e.eventId)).filter((_, i) => history.events[i]!.activityTaskScheduledEventAttributes).at(-1);
    expect(lastStart).toBeGreaterThan(500);
    await expect(replayHistory(history, 'pool/long-history')).resolves.toBeUndefined();
  });

  it('a pool with runners that had reported (recorded before pools looked for runners that ended unreported)', async () => {
    const history = loadHistory(__dirname, 'reported-runners-before-the-audit.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('audit-ended-runners');
    // Its runners reported to it, so today's code would arm the look for ended ones.
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'runnersChanged').length).toBeGreaterThan(0);
    await expect(replayHistory(history, 'pool/reported-runners')).resolves.toBeUndefined();
  });

  it('a deleted pool asking a runner that ended before its first report (recorded before started runners counted as existing)', async () => {
    const history = loadHistory(__dirname, 'runner-ended-before-reporting-before-starts-counted.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('count-started-runners-as-existing');
    // The ask found no workflow, and the old code kept the runner: the pool never closed.
    expect(events.some((e) => e.signalExternalWorkflowExecutionFailedEventAttributes)).toBe(true);
    expect(events.at(-1)!.workflowExecutionTerminatedEventAttributes).toBeTruthy();
    await expect(replayHistory(history, 'pool/silent-runner')).resolves.toBeUndefined();
  });

  it('a pool that took extra specs past the cap from an updatePool signal (recorded before such signals were refused)', async () => {
    const history = loadHistory(__dirname, 'extra-specs-past-the-cap-by-signal-before-refused.json');
    expect(patchIds(history.events)).not.toContain('update-signal-extra-specs-capped');
    // The settings it took let it start two runners where its own allowed one.
    const starts = history.events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startRunners');
    expect(starts.flatMap((e) => payload<{ runners: unknown[] }>(e.activityTaskScheduledEventAttributes!.input!.payloads![0]).runners)).toHaveLength(2);
    await expect(replayHistory(history, 'pool/signalled-extra-specs')).resolves.toBeUndefined();
  });

  it('a pool that took an image past the cap from an updatePool signal (recorded before such signals were refused)', async () => {
    const history = loadHistory(__dirname, 'large-image-by-signal-before-refused.json');
    // Recorded with the extra specs' cap in force, before the cap on the rest a runner carries.
    expect(patchIds(history.events)).toContain('update-signal-extra-specs-capped');
    expect(patchIds(history.events)).not.toContain('update-signal-runner-settings-capped');
    // The settings it took let it start two runners, each carrying the 10 KB image, where its own allowed one.
    const starts = history.events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startRunners');
    const runners = starts.flatMap((e) => payload<{ runners: { spec: { image: string } }[] }>(e.activityTaskScheduledEventAttributes!.input!.payloads![0]).runners);
    expect(runners.map((r) => r.spec.image.length)).toEqual([10_021, 10_021]);
    await expect(replayHistory(history, 'pool/signalled-large-image')).resolves.toBeUndefined();
  });

  it('a pool that took durations with fractions of a millisecond from an updatePool signal (recorded before such signals were refused)', async () => {
    const history = loadHistory(__dirname, 'fractional-duration-by-signal-before-refused.json');
    expect(patchIds(history.events)).toContain('update-signal-runner-settings-capped');
    expect(patchIds(history.events)).not.toContain('update-signal-durations-whole-ms');
    // The signal carried a number and a string with fractions; the old code took both and wrote its memo.
    const update = history.events.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'updatePool')!;
    const sent = payload<{ settings: { idleTimeout: number; bootstrapTimeout: string } }>(update.workflowExecutionSignaledEventAttributes!.input!.payloads![0]).settings;
    expect([sent.idleTimeout, sent.bootstrapTimeout]).toEqual([90_000.5, '20.0005s']);
    const memoAfter = history.events.filter((e) => e.workflowPropertiesModifiedEventAttributes && Number(e.eventId) > Number(update.eventId));
    expect(memoAfter.length).toBeGreaterThan(0);
    await expect(replayHistory(history, 'pool/fractional-duration')).resolves.toBeUndefined();
  });

  it('a pool that took a mode change from an updatePool signal (recorded before such signals were refused)', async () => {
    const history = loadHistory(__dirname, 'mode-change-by-signal-before-refused.json');
    expect(patchIds(history.events)).not.toContain('mode-change-refused-in-signal');
    // The old code went on as a scale-set pool: it started a listener.
    expect(history.events.some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toBe(true);
    await expect(replayHistory(history, 'pool/signalled-mode-change')).resolves.toBeUndefined();
  });

  it('a pool that dropped a report whose number it had seen (recorded before a retried runner task\'s reports were taken)', async () => {
    const history = loadHistory(__dirname, 'report-number-repeated-by-a-retried-task-before-taken.json');
    const events = history.events;
    expect(patchIds(events)).not.toContain('reports-of-a-retried-runner-task');
    // The runner stayed "deleting" and silent past the pool's leaveReaskInterval: today's pools look early.
    expect(patchIds(events)).not.toContain('early-look-for-silent-leavers');
    // One runner said "deleting" and then "deleted" under one number, and the old code kept it:
    // the deleted pool, its one slot held, started no runner after the first.
    const reports = events
      .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'runnersChanged')
      .flatMap((e) => payload<{ reports: { seq: number; status: string }[] }>(e.workflowExecutionSignaledEventAttributes!.input!.payloads![0]).reports);
    const [deleting, deleted] = [reports.find((r) => r.status === 'deleting')!, reports.find((r) => r.status === 'deleted')!];
    expect(deleted.seq).toBe(deleting.seq);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startRunners')).toHaveLength(1);
    expect(events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'deletePool')).toBe(true);
    expect(events.some((e) => e.workflowExecutionCompletedEventAttributes)).toBe(false);
    await expect(replayHistory(history, 'pool/repeated-report-number')).resolves.toBeUndefined();
  });

  it('a pool with capped decisions run on the current code', async () => {
    const settings = poolSettings({ minIdleRunners: 7, maxRunners: 10 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, maxStartsPerDecision: 3 });
    await eventually(async () => ((await pool.query(poolStateQuery)).runners.length === 7 ? true : undefined), 20_000, 'seven runners');
    await pool.signal(deletePoolSignal, {});
    await pool.result();
    const history = await pool.fetchHistory();
    await expect(replayHistory(history, pool.workflowId)).resolves.toBeUndefined();
  });
});
