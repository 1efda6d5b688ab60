import { describe, expect, it } from 'vitest';
import { poolSettingsSchema, type PoolSettingsInput } from '../../domain/pool';
import { LEAVE_REASK_MS, PoolBook } from '../../workflows/pool-book';
import { FAST_TIMINGS } from '../support/temporal';
import { jobProgressArgs } from '../../workflows/signal-input';

const T0 = Date.parse('2026-01-01T00:00:00Z');
let seq = 0;
const nextSeq = () => ++seq;

function settings(overrides: Partial<PoolSettingsInput> = {}) {
  return poolSettingsSchema.parse({
    name: 'linux',
    github: { scope: { kind: 'org', org: 'acme' } },
    labels: ['linux', 'x64'],
    provider: 'fake',
    maxRunners: 5,
    idleTimeout: 1_000,
    ...overrides,
  });
}

function startN(book: PoolBook, n: number, now = T0): string[] {
  return Array.from({ length: n }, (_, i) => {
    const name = book.nextRunnerName(`r${i}-${book.runnerSeq}`);
    book.runnerStarted(name, now);
    return name;
  });
}

describe('PoolBook scaling', () => {
  it('keeps min idle runners and adds one per queued job, up to maxRunners', () => {
    const book = new PoolBook(settings({ minIdleRunners: 2 }), FAST_TIMINGS);
    expect(book.plan(T0).create).toBe(2);
    startN(book, 2);
    for (let job = 1; job <= 10; job++) book.jobQueued({ jobId: job, labels: ['linux'] }, T0);
    // 2 min idle + 10 queued = 12 wanted, but only 5 may exist.
    expect(book.plan(T0).create).toBe(3);
    startN(book, 3);
    expect(book.plan(T0).create).toBe(0);
    expect(book.view().target).toBe(5);
  });

  it('counts runners that are leaving against maxRunners', () => {
    const book = new PoolBook(settings({ maxRunners: 2 }), FAST_TIMINGS);
    const [a, b] = startN(book, 2);
    book.runnerChanged({ seq: nextSeq(), name: a!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: a!, status: 'deleting', runnerStatus: 'terminated' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: b!, status: 'pending_delete', runnerStatus: 'idle' }, T0);
    book.jobQueued({ jobId: 1, labels: [] }, T0);
    expect(book.plan(T0).create).toBe(0);
    book.runnerChanged({ seq: nextSeq(), name: a!, status: 'deleted', runnerStatus: 'terminated' }, T0);
    expect(book.plan(T0).create).toBe(1);
  });

  it('ignores redelivered and out-of-order job events', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    expect(book.jobQueued({ jobId: 7, labels: [] }, T0)).toBe(true);
    expect(book.jobQueued({ jobId: 7, labels: [] }, T0)).toBe(false);
    expect(book.jobProgress({ jobId: 7, action: 'in_progress' }, T0)).toBe(true);
    expect(book.jobProgress({ jobId: 7, action: 'in_progress' }, T0)).toBe(false);
    expect(book.view().queuedJobs).toEqual([]);
    // A queued event arriving after in_progress must not bring the job back.
    expect(book.jobQueued({ jobId: 8, labels: [] }, T0)).toBe(true);
    book.jobProgress({ jobId: 9, action: 'in_progress' }, T0);
    expect(book.jobQueued({ jobId: 9, labels: [] }, T0)).toBe(false);
  });

  it('scales idle runners down after the idle timeout, never busy ones', () => {
    const book = new PoolBook(settings({ minIdleRunners: 1 }), FAST_TIMINGS);
    const [idle1, idle2, busy] = startN(book, 3);
    book.runnerChanged({ seq: nextSeq(), name: idle1!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: idle2!, status: 'running', runnerStatus: 'idle' }, T0 + 100);
    book.runnerChanged({ seq: nextSeq(), name: busy!, status: 'running', runnerStatus: 'active', jobId: 3 }, T0);
    const early = book.plan(T0 + 500);
    expect(early.remove).toEqual([]);
    expect(early.wakeAt).toBe(T0 + 1_000);
    const later = book.plan(T0 + 5_000);
    // One idle runner stays (min idle 1); the oldest idle one goes; the busy one is never picked.
    expect(later.remove.map((r) => r.name)).toEqual([idle1]);
  });

  it('backs off creating after runners fail to bootstrap, and recovers', () => {
    const book = new PoolBook(settings({ minIdleRunners: 1 }), FAST_TIMINGS);
    const [first] = startN(book, 1);
    book.runnerChanged({ seq: nextSeq(), name: first!, status: 'deleted', runnerStatus: 'pending' }, T0);
    expect(book.consecutiveBootstrapFailures).toBe(1);
    expect(book.plan(T0 + 10)).toMatchObject({ create: 0, wakeAt: T0 + FAST_TIMINGS.poolCreateBackoffInitialMs });
    expect(book.plan(T0 + FAST_TIMINGS.poolCreateBackoffInitialMs).create).toBe(1);
    const [second] = startN(book, 1, T0 + 1_000);
    book.runnerChanged({ seq: nextSeq(), name: second!, status: 'deleted', runnerStatus: 'pending' }, T0 + 2_000);
    // Doubled: 2 x initial.
    expect(book.plan(T0 + 2_000 + FAST_TIMINGS.poolCreateBackoffInitialMs).create).toBe(0);
    expect(book.plan(T0 + 2_000 + 2 * FAST_TIMINGS.poolCreateBackoffInitialMs).create).toBe(1);
    const [third] = startN(book, 1, T0 + 5_000);
    book.runnerChanged({ seq: nextSeq(), name: third!, status: 'running', runnerStatus: 'idle' }, T0 + 6_000);
    expect(book.consecutiveBootstrapFailures).toBe(0);
  });

  it('replaces idle runners from older settings, leaves busy ones alone', () => {
    const book = new PoolBook(settings({ minIdleRunners: 2 }), FAST_TIMINGS);
    const [idle, busy] = startN(book, 2);
    book.runnerChanged({ seq: nextSeq(), name: idle!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: busy!, status: 'running', runnerStatus: 'active' }, T0);
    book.updateSettings(settings({ minIdleRunners: 2, image: 'ubuntu-26.04' }));
    const plan = book.plan(T0);
    expect(plan.remove).toEqual([{ name: idle, reason: 'pool settings changed' }]);
    book.markDeleteRequested(idle!);
    // The leaving runner still holds a slot; new runners come from the new settings.
    expect(book.plan(T0).create).toBe(2);
    // Its exit is not counted as a bootstrap failure.
    book.runnerChanged({ seq: nextSeq(), name: idle!, status: 'deleted', runnerStatus: 'terminated' }, T0);
    expect(book.consecutiveBootstrapFailures).toBe(0);
  });

  it('drops queued jobs older than the queue TTL', () => {
    const book = new PoolBook(settings(), { ...FAST_TIMINGS, queuedJobTtlMs: 1_000 });
    book.jobQueued({ jobId: 1, labels: [] }, T0);
    expect(book.plan(T0 + 500)).toMatchObject({ create: 1, wakeAt: T0 + 1_000 });
    expect(book.plan(T0 + 1_500).create).toBe(0);
    expect(book.view().queuedJobs).toEqual([]);
  });

  it('carries its state across continue-as-new', () => {
    const book = new PoolBook(settings({ minIdleRunners: 1 }), FAST_TIMINGS);
    const [r] = startN(book, 1);
    book.runnerChanged({ seq: nextSeq(), name: r!, status: 'running', runnerStatus: 'idle' }, T0);
    book.jobQueued({ jobId: 5, labels: [] }, T0);
    book.updateSettings(settings({ minIdleRunners: 1, priority: 3 }));
    const next = new PoolBook(book.settings, FAST_TIMINGS, book.carry());
    expect(next.view()).toEqual(book.view());
    expect(next.jobQueued({ jobId: 5, labels: [] }, T0)).toBe(false);
    expect(next.nextRunnerName('x')).toBe(`linux-x`);
    expect(next.runnerSeq).toBe(book.runnerSeq + 1);
  });

  it('after continue-as-new, a runner that finished its job and goes away is no bootstrap failure', () => {
    const book = new PoolBook(settings({ maxRunners: 10 }), FAST_TIMINGS);
    const [done, silent] = startN(book, 2);
    book.runnerChanged({ seq: 1, name: done!, status: 'running', runnerStatus: 'active', jobId: 7 }, T0);
    book.runnerChanged({ seq: 2, name: done!, status: 'pending_delete', runnerStatus: 'terminated', jobId: 7 }, T0);
    const next = new PoolBook(book.settings, FAST_TIMINGS, book.carry());
    // A report older than one already applied stays stale after the carry.
    expect(next.runnerChanged({ seq: 1, name: done!, status: 'running', runnerStatus: 'active', jobId: 7 }, T0)).toBe(false);
    next.runnerChanged({ seq: 3, name: done!, status: 'deleted', runnerStatus: 'terminated', jobId: 7 }, T0 + 10);
    expect(next.consecutiveBootstrapFailures).toBe(0);
    // Two jobs: the runner still starting covers one, the other gets a runner at once (no backoff).
    next.jobQueued({ jobId: 8, labels: [] }, T0 + 10);
    next.jobQueued({ jobId: 9, labels: [] }, T0 + 10);
    expect(next.plan(T0 + 10).create).toBe(1);
    // One that never came online still is.
    next.runnerChanged({ seq: 1, name: silent!, status: 'deleted', runnerStatus: 'pending' }, T0 + 20);
    expect(next.consecutiveBootstrapFailures).toBe(1);
  });

  it('takes a runner first heard of after its job, or as deleted with it, for one that came online', () => {
    // A runner whose agent came up, took its job and finished it within one workflow task (its
    // worker busy or down meanwhile) reports once, where that task ended.
    const book = new PoolBook(settings({ maxRunners: 10 }), FAST_TIMINGS);
    const [quick, busyFirst, silent] = startN(book, 3);
    book.runnerChanged({ seq: 1, name: quick!, status: 'deleted', runnerStatus: 'terminated', jobId: 7 }, T0);
    book.runnerChanged({ seq: 1, name: busyFirst!, status: 'pending_delete', runnerStatus: 'terminated', jobId: 8 }, T0);
    book.runnerChanged({ seq: 2, name: busyFirst!, status: 'deleted', runnerStatus: 'terminated', jobId: 8 }, T0);
    expect(book.consecutiveBootstrapFailures).toBe(0);
    for (let job = 10; job < 13; job++) book.jobQueued({ jobId: job, labels: [] }, T0);
    // The one still starting covers one job; the other two get runners at once, with no pause.
    expect(book.plan(T0).create).toBe(2);
    book.runnerChanged({ seq: 1, name: silent!, status: 'deleted', runnerStatus: 'pending' }, T0);
    expect(book.consecutiveBootstrapFailures).toBe(1);

    // Pools begun before replay as they ran: each such runner paused the next start.
    const earlier = new PoolBook(settings({ maxRunners: 10 }), FAST_TIMINGS, undefined, { reaskLeaving: true, packQueue: true, startedCounts: true, retriedReports: true, jobMeansReady: false });
    const [old] = startN(earlier, 1);
    earlier.runnerChanged({ seq: 1, name: old!, status: 'deleted', runnerStatus: 'terminated', jobId: 9 }, T0);
    expect(earlier.consecutiveBootstrapFailures).toBe(1);
  });

  it('hears the reports of a runner whose workflow task was retried after its worker died', () => {
    // The lost attempt's first delete failed and said "deleting" under number 3; the retry's
    // delete went through and said "deleted" under the same number.
    const book = new PoolBook(settings({ maxRunners: 1 }), FAST_TIMINGS);
    const [r] = startN(book, 1);
    book.runnerChanged({ seq: 1, name: r!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: 2, name: r!, status: 'running', runnerStatus: 'active', jobId: 4 }, T0);
    expect(book.runnerChanged({ seq: 3, name: r!, status: 'deleting', runnerStatus: 'terminated', jobId: 4 }, T0)).toBe(true);
    expect(book.runnerChanged({ seq: 3, name: r!, status: 'deleted', runnerStatus: 'terminated', jobId: 4 }, T0 + 10)).toBe(true);
    expect(book.view().runners).toEqual([]);
    book.jobQueued({ jobId: 5, labels: [] }, T0 + 10);
    expect(book.plan(T0 + 10).create).toBe(1);

    // The lost attempt got further than the retry before it: "deleted" still ends the runner.
    const [s] = startN(book, 1);
    book.runnerChanged({ seq: 2, name: s!, status: 'pending_delete', runnerStatus: 'terminated' }, T0);
    book.runnerChanged({ seq: 3, name: s!, status: 'deleting', runnerStatus: 'terminated' }, T0);
    expect(book.runnerChanged({ seq: 2, name: s!, status: 'deleted', runnerStatus: 'terminated' }, T0 + 10)).toBe(true);
    expect(book.view().runners).toEqual([]);
    // Anything else older than what was heard stays stale.
    const [t] = startN(book, 1);
    book.runnerChanged({ seq: 2, name: t!, status: 'running', runnerStatus: 'active' }, T0);
    expect(book.runnerChanged({ seq: 1, name: t!, status: 'running', runnerStatus: 'idle' }, T0)).toBe(false);
  });

  it('looks early for a runner on its way out that has gone silent, less often the longer it leaves', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    const [leaving, idle] = startN(book, 2);
    book.runnerChanged({ seq: 1, name: idle!, status: 'running', runnerStatus: 'idle' }, T0);
    expect(book.silentLeaversDueAt(T0, 1_000, 60_000)).toBeUndefined();
    book.runnerChanged({ seq: 1, name: leaving!, status: 'pending_delete', runnerStatus: 'terminated' }, T0);
    // Silent for 1 s, then 2, 4, 8 ... after it started leaving, each after the last look.
    expect(book.silentLeaversDueAt(T0, 1_000, 60_000)).toBe(T0 + 1_000);
    expect(book.silentLeaversDueAt(T0 + 1_000, 1_000, 60_000)).toBe(T0 + 2_000);
    expect(book.silentLeaversDueAt(T0 + 2_500, 1_000, 60_000)).toBe(T0 + 4_000);
    // Never as late as the interval's own look.
    expect(book.silentLeaversDueAt(T0 + 32_000, 1_000, 60_000)).toBeUndefined();
    // News starts the silence again.
    book.runnerChanged({ seq: 2, name: leaving!, status: 'deleting', runnerStatus: 'terminated' }, T0 + 40_000);
    expect(book.silentLeaversDueAt(T0 + 40_000, 1_000, 60_000)).toBe(T0 + 41_000);
  });

  it('in pools begun before, replays dropping a report whose number it has seen', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS, undefined, { reaskLeaving: true, packQueue: true, startedCounts: true });
    const [r] = startN(book, 1);
    book.runnerChanged({ seq: 3, name: r!, status: 'deleting', runnerStatus: 'terminated' }, T0);
    expect(book.runnerChanged({ seq: 3, name: r!, status: 'deleted', runnerStatus: 'terminated' }, T0)).toBe(false);
    expect(book.view().runners.map((x) => x.status)).toEqual(['deleting']);
  });

  it('a runner gone before continue-as-new stays gone after it: a late report does not bring it back', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    const [r] = startN(book, 1);
    book.runnerChanged({ seq: 1, name: r!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: 3, name: r!, status: 'deleted', runnerStatus: 'terminated' }, T0);
    const next = new PoolBook(book.settings, FAST_TIMINGS, book.carry());
    expect(next.runnerChanged({ seq: 2, name: r!, status: 'pending_delete', runnerStatus: 'terminated' }, T0 + 10)).toBe(false);
    expect(next.view().runners).toEqual([]);
  });

  it('reads state carried before it held everReady: a runner that took a job came online', () => {
    const carried = {
      settingsVersion: 1,
      runners: [{ name: 'linux-a', status: 'pending_delete' as const, runnerStatus: 'terminated' as const, jobId: 3, settingsVersion: 1, since: new Date(T0).toISOString() }],
      queuedJobs: [],
      handledJobEvents: [],
      runnerSeq: 1,
      deleting: false,
      consecutiveBootstrapFailures: 0,
    };
    const book = new PoolBook(settings(), FAST_TIMINGS, carried);
    book.runnerChanged({ seq: 1, name: 'linux-a', status: 'deleted', runnerStatus: 'terminated', jobId: 3 }, T0);
    expect(book.consecutiveBootstrapFailures).toBe(0);
  });

  it('a deleted pool asks every runner to leave and is done when they are gone', () => {
    const book = new PoolBook(settings({ minIdleRunners: 2 }), FAST_TIMINGS);
    const [a, b] = startN(book, 2);
    book.runnerChanged({ seq: nextSeq(), name: b!, status: 'running', runnerStatus: 'active' }, T0);
    book.startDeleting();
    expect(book.plan(T0)).toEqual({ create: 0, remove: [{ name: a, reason: 'pool deleted' }, { name: b, reason: 'pool deleted' }] });
    expect(book.done).toBe(false);
    book.runnerChanged({ seq: nextSeq(), name: a!, status: 'deleted', runnerStatus: 'terminated' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: b!, status: 'deleted', runnerStatus: 'terminated' }, T0);
    expect(book.done).toBe(true);
  });

  it('asks a runner to leave again while it stays silent (its start may still have been in flight), never one that reports leaving', () => {
    const book = new PoolBook(settings({ minIdleRunners: 2 }), { ...FAST_TIMINGS, leaveReaskIntervalMs: 5_000 });
    const [a, b] = startN(book, 2);
    book.startDeleting();
    const first = book.plan(T0);
    for (const { name, reason } of first.remove) book.markDeleteRequested(name, reason, T0);
    expect(book.plan(T0 + 1_000)).toEqual({ create: 0, remove: [], wakeAt: T0 + 5_000 });
    // b heard the first ask; a's signal was lost.
    book.runnerChanged({ seq: nextSeq(), name: b!, status: 'pending_delete', runnerStatus: 'idle' }, T0 + 2_000);
    book.runnerChanged({ seq: nextSeq(), name: a!, status: 'running', runnerStatus: 'idle' }, T0 + 2_000);
    expect(book.plan(T0 + 5_000)).toEqual({ create: 0, remove: [{ name: a, reason: 'pool deleted' }] });
  });

  it('asks at once, with the same reason, a runner that reports in without leaving after it was asked (it did not hear)', () => {
    const book = new PoolBook(settings({ minIdleRunners: 1 }), { ...FAST_TIMINGS, leaveReaskIntervalMs: 60_000 });
    const [a] = startN(book, 1);
    book.markDeleteRequested(a!, 'idle for longer than 1000 ms', T0);
    expect(book.plan(T0 + 1_000).remove).toEqual([]);
    book.runnerChanged({ seq: nextSeq(), name: a!, status: 'running', runnerStatus: 'idle' }, T0 + 2_000);
    expect(book.plan(T0 + 2_000).remove).toEqual([{ name: a, reason: 'idle for longer than 1000 ms' }]);
  });

  it('asks again after 30 s when its timings predate the setting (a pool started before it existed)', () => {
    const { leaveReaskIntervalMs: _absent, ...older } = FAST_TIMINGS;
    const book = new PoolBook(settings(), older);
    const [a] = startN(book, 1);
    book.startDeleting();
    book.markDeleteRequested(a!, 'pool deleted', T0);
    expect(book.plan(T0 + 1_000)).toEqual({ create: 0, remove: [], wakeAt: T0 + LEAVE_REASK_MS });
    expect(book.plan(T0 + LEAVE_REASK_MS)).toEqual({ create: 0, remove: [{ name: a, reason: 'pool deleted' }] });
  });

  it('keeps the ask-again timers out of pools whose history predates them', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS, undefined, { reaskLeaving: false });
    const [a] = startN(book, 1);
    book.startDeleting();
    book.markDeleteRequested(a!, 'pool deleted', T0);
    expect(book.plan(T0 + LEAVE_REASK_MS)).toEqual({ create: 0, remove: [] });
  });

  it('adopts a runner whose start was reported refused if it reports in after all', () => {
    const book = new PoolBook(settings({ maxRunners: 2 }), FAST_TIMINGS);
    const [r] = startN(book, 1);
    book.runnerNotStarted(r!);
    expect(book.view().runners).toEqual([]);
    expect(book.runnerChanged({ seq: nextSeq(), name: r!, status: 'running', runnerStatus: 'idle' }, T0)).toBe(true);
    expect(book.view().runners.map((x) => x.name)).toEqual([r]);
    // Once the pool is deleted, it is asked to leave like any other.
    book.startDeleting();
    expect(book.plan(T0).remove).toEqual([{ name: r, reason: 'pool deleted' }]);
  });

  it('drops stale and late reports: a runner that is gone stays gone', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    const [r] = startN(book, 1);
    book.runnerChanged({ seq: 5, name: r!, status: 'running', runnerStatus: 'idle' }, T0);
    expect(book.runnerChanged({ seq: 4, name: r!, status: 'creating', runnerStatus: 'pending' }, T0)).toBe(false);
    expect(book.view().runners[0]).toMatchObject({ status: 'running', runnerStatus: 'idle' });
    book.runnerChanged({ seq: 8, name: r!, status: 'deleted', runnerStatus: 'terminated' }, T0);
    expect(book.runnerChanged({ seq: 7, name: r!, status: 'deleting', runnerStatus: 'terminated' }, T0)).toBe(false);
    expect(book.view().runners).toEqual([]);
  });

  it('takes a runner named by an in_progress webhook as busy before the runner reports it', () => {
    const book = new PoolBook(settings({ minIdleRunners: 0 }), FAST_TIMINGS);
    const [a, b] = startN(book, 2);
    book.runnerChanged({ seq: 1, name: a!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: 1, name: b!, status: 'running', runnerStatus: 'idle' }, T0);
    book.jobQueued({ jobId: 5, labels: [] }, T0);
    book.jobProgress({ jobId: 5, action: 'in_progress', runnerName: a! }, T0);
    // Idle timeout long passed: only the really idle runner goes.
    expect(book.plan(T0 + 60_000).remove.map((r) => r.name)).toEqual([b]);
    // The runner's idle report from before it took the job arrives late: ignored.
    expect(book.runnerChanged({ seq: 2, name: a!, status: 'running', runnerStatus: 'idle' }, T0)).toBe(false);
    expect(book.view().runners.find((r) => r.name === a)).toMatchObject({ runnerStatus: 'active', jobId: 5 });
    // A static runner done with that very job is idle again.
    expect(book.runnerChanged({ seq: 3, name: a!, status: 'running', runnerStatus: 'idle', jobId: 5 }, T0)).toBe(true);
  });

  it("records the repository a job's start names (a scale set's job has no queued webhook), also when the start is heard again", () => {
    const book = new PoolBook(settings({ minIdleRunners: 0 }), FAST_TIMINGS);
    book.jobProgress({ jobId: 8, action: 'in_progress', repository: 'Acme-East/app' }, T0);
    // Heard again (a redelivered message): nothing changes but when the repository was last heard of.
    expect(book.jobProgress({ jobId: 8, action: 'in_progress', repository: 'acme-east/app' }, T0 + 2_000)).toBe(false);
    book.jobProgress({ jobId: 9, action: 'completed', repository: 'acme-west/api' }, T0 + 3_000);
    // Most lately first, each repository once, and carried across continue-as-new.
    expect(book.repositories.newestFirst()).toEqual([
      ['acme-west/api', T0 + 3_000],
      ['acme-east/app', T0 + 2_000],
    ]);
    expect(new PoolBook(book.settings, FAST_TIMINGS, book.carry()).repositories.newestFirst()).toEqual(book.repositories.newestFirst());
  });

  it("takes a job off the queue when a runner's own report names it, and ignores a late queued redelivery", () => {
    const book = new PoolBook(settings({ minIdleRunners: 0 }), FAST_TIMINGS);
    const [a] = startN(book, 1);
    book.jobQueued({ jobId: 7, labels: [] }, T0);
    book.runnerChanged({ seq: 1, name: a!, status: 'running', runnerStatus: 'idle' }, T0);
    expect(book.view().queuedJobs.map((j) => j.jobId)).toEqual([7]);
    book.runnerChanged({ seq: 2, name: a!, status: 'running', runnerStatus: 'active', jobId: 7 }, T0);
    expect(book.view().queuedJobs).toEqual([]);
    expect(book.jobQueued({ jobId: 7, labels: [] }, T0)).toBe(false);
    expect(book.view().queuedJobs).toEqual([]);
  });

  it('a disabled pool creates nothing', () => {
    const book = new PoolBook(settings({ minIdleRunners: 2, enabled: false }), FAST_TIMINGS);
    book.jobQueued({ jobId: 1, labels: [] }, T0);
    expect(book.plan(T0).create).toBe(0);
  });

  it('counts a job beyond its queue bound as dropped, and takes it when told again once there is room', () => {
    const book = new PoolBook(settings({ maxRunners: 0 }), FAST_TIMINGS, undefined, { reaskLeaving: true, maxQueued: 2 });
    const job = (jobId: number) => ({ jobId, labels: ['linux'], queuedAt: new Date(T0).toISOString() });
    expect(book.jobQueued(job(1), T0)).toBe(true);
    expect(book.jobQueued(job(2), T0)).toBe(true);
    expect(book.jobQueued(job(3), T0)).toBe(false);
    expect(book.view()).toMatchObject({ queuedJobCount: 2, queuedJobsDropped: 1 });
    // Job 1 is taken: room for one more, and job 3 told again (the sweep routes it again) is kept.
    book.jobProgress({ jobId: 1, action: 'in_progress' }, T0);
    expect(book.jobQueued(job(3), T0)).toBe(true);
    expect(book.view().queuedJobs.map((j) => j.jobId)).toEqual([2, 3]);
    // A redelivery of a kept job is still not counted twice.
    expect(book.jobQueued(job(3), T0)).toBe(false);
    expect(book.carry()).toMatchObject({ queuedJobsDropped: 1 });
  });
});

describe('jobProgress signal input', () => {
  it("keeps a job's repository, and drops one that is not a string without dropping the job's progress", () => {
    expect(jobProgressArgs({ jobId: 4, action: 'in_progress', runnerName: 'r1', repository: 'acme/app' })).toEqual({ jobId: 4, action: 'in_progress', runnerName: 'r1', repository: 'acme/app' });
    expect(jobProgressArgs({ jobId: 4, action: 'completed', repository: 42 })).toEqual({ jobId: 4, action: 'completed' });
  });
});

describe('PoolBook carried state', () => {
  it('fits the most a pool may hold into one continue-as-new, dropping the jobs queued last', () => {
    // 5,000 busy runners with the longest prefix, and a full queue of jobs from five thousand repositories.
    const book = new PoolBook(settings({ maxRunners: 5_000, runnerPrefix: 'a-runner-prefix-of-31-character' }), FAST_TIMINGS);
    for (const name of startN(book, 5_000)) book.runnerChanged({ seq: nextSeq(), name, status: 'running', runnerStatus: 'active', jobId: seq }, T0);
    for (let i = 0; i < 20_000; i++) book.jobQueued({ jobId: 1_000_000 + i, labels: ['linux', 'x64', `matrix-entry-${i % 2_000}`], repository: `acme-corporation/service-number-${i % 5_000}`, queuedAt: new Date(T0 + i).toISOString() }, T0);
    expect(JSON.stringify(book.carry()).length).toBeGreaterThan(2_097_152);

    const { carried, dropped } = book.carryWithin(1_800_000);
    expect(JSON.stringify(carried).length).toBeLessThanOrEqual(1_800_000);
    expect(dropped).toBeGreaterThan(0);
    expect(carried.queuedJobsDropped).toBe(dropped);
    expect(carried.runners).toHaveLength(5_000);
    // The oldest jobs stay; the ones queued last went.
    const next = new PoolBook(book.settings, FAST_TIMINGS, carried);
    expect(next.knownJobs([1_000_000, 1_019_999])).toEqual([1_000_000]);
    expect(next.queuedJobCount).toBe(20_000 - dropped);
  });

  it('leaves a state that fits as it is', () => {
    const book = new PoolBook(settings({ maxRunners: 10 }), FAST_TIMINGS);
    startN(book, 3);
    book.jobQueued({ jobId: 1, labels: ['linux'] }, T0);
    expect(book.carryWithin(1_800_000)).toEqual({ carried: book.carry(), dropped: 0 });
  });
});

describe('PoolBook runners not yet heard come online', () => {
  it('names started runners that have said nothing but "starting", and none that came online, left or were asked to leave', () => {
    const book = new PoolBook(settings({ maxRunners: 6 }), FAST_TIMINGS);
    const [notStarted, started, creating, idle, leaving, asked] = startN(book, 6);
    book.runnersStarted([started!, creating!, idle!, leaving!, asked!]);
    book.runnerChanged({ seq: nextSeq(), name: creating!, status: 'creating', runnerStatus: 'pending' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: idle!, status: 'running', runnerStatus: 'idle' }, T0);
    book.runnerChanged({ seq: nextSeq(), name: leaving!, status: 'pending_delete', runnerStatus: 'pending' }, T0);
    book.markDeleteRequested(asked!, 'scale down', T0);
    // One whose start has not returned may not exist yet: no one to ask.
    expect(book.unheardRunners().sort()).toEqual([started!, creating!].sort());
    expect(book.unheardRunners()).not.toContain(notStarted);
  });
});
