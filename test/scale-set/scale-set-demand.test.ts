import { describe, expect, it } from 'vitest';
import { poolSettingsSchema, type PoolSettingsInput } from '../../domain/pool';
import { desiredRunnerCount, foreignLabels, scaleSetChanges, scaleSetIdentityOf, scaleSetNameOf } from '../../domain/scale-set';
import { poolMemoOf, scaleSetIdentityOfMemo } from '../../workflows/pool-memo';
import type { PoolMemo } from '../../workflows/pool-messages';
import { PoolBook } from '../../workflows/pool-book';
import { candidatePools } from '../../api/job-routing';
import { FAST_TIMINGS } from '../support/temporal';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function settings(overrides: Partial<PoolSettingsInput> = {}) {
  return poolSettingsSchema.parse({
    name: 'big',
    mode: 'scaleSet',
    github: { scope: { kind: 'org', org: 'acme' } },
    labels: ['linux'],
    provider: 'fake',
    maxRunners: 4,
    ...overrides,
  });
}

describe('what a scale-set pool cannot change in place', () => {
  it('is what names its scale set at GitHub, and its labels as GitHub compares them', () => {
    const current = scaleSetIdentityOf(settings());
    expect(scaleSetChanges(current, settings({ maxRunners: 9, scaleSet: { minRunners: 1 }, labels: ['LINUX', 'linux'] }))).toEqual([]);
    expect(scaleSetChanges(current, settings({ scaleSet: { name: 'big', minRunners: 0 } }))).toEqual([]);
    // The listener moves the scale set to a new runner group, and renames it: not a change of scale set.
    expect(scaleSetChanges(current, settings({ runnerGroup: 'elsewhere' }))).toEqual([]);
    expect(scaleSetChanges(current, settings({ scaleSet: { name: 'bigger', minRunners: 0 } }))).toEqual([]);
    const changed = scaleSetChanges(
      current,
      settings({ scaleSet: { name: 'bigger', minRunners: 0 }, runnerGroup: 'gpu', github: { credentials: 'other', scope: { kind: 'org', org: 'acme' } }, labels: ['linux', 'gpu'] }),
    );
    expect(changed.map((c) => c.path)).toEqual(['github.credentials', 'labels']);
    expect(changed[0]!.message).toBe('is "other"; the scale set is reached with "default"');
    expect(scaleSetChanges(current, settings({ github: { scope: { kind: 'repo', owner: 'acme', repo: 'app' } } })).map((c) => c.path)).toEqual(['github.scope']);
  });

  it("is read from the pool's memo as it was written, and not from a memo that predates it", () => {
    const pool = settings({ scaleSet: { name: 'big-set', minRunners: 0 }, runnerGroup: 'gpu' });
    const memo = JSON.parse(JSON.stringify(poolMemoOf(pool))) as PoolMemo;
    expect(scaleSetIdentityOfMemo(memo)).toEqual(scaleSetIdentityOf(pool));
    const { scaleSet: _older, ...predating } = memo;
    expect(scaleSetIdentityOfMemo(predating)).toBeUndefined();
    expect(scaleSetIdentityOfMemo(poolMemoOf(settings({ mode: 'webhook' })))).toBeUndefined();
  });
});

describe("a found scale set's labels", () => {
  it("are told only when they are not those the pool would make it with, compared as GitHub does", () => {
    expect(foreignLabels(['Big', 'LINUX', 'linux'], 'big', ['linux'])).toBeUndefined();
    expect(foreignLabels(undefined, 'big', ['linux'])).toBeUndefined();
    expect(foreignLabels(['linux'], 'big', ['linux'])).toEqual(['linux']);
    expect(foreignLabels(['big', 'linux', 'gpu'], 'big', ['linux'])).toEqual(['big', 'linux', 'gpu']);
  });
});

describe("actions-runner-controller's desired-count rule", () => {
  it('is min(maxRunners, minRunners + totalAssignedJobs)', () => {
    expect(desiredRunnerCount(0, 4, 0)).toBe(0);
    expect(desiredRunnerCount(1, 4, 2)).toBe(3);
    expect(desiredRunnerCount(1, 4, 10)).toBe(4);
    expect(desiredRunnerCount(2, 2, 0)).toBe(2);
  });
});

describe('a scale-set pool book', () => {
  it('wants nothing until the listener has reported, then follows the statistics minus busy runners', () => {
    const book = new PoolBook(settings({ scaleSet: { minRunners: 1 } }), FAST_TIMINGS);
    expect(book.plan(T0).create).toBe(0);
    expect(book.scaleSetRef()).toEqual({});
    expect(book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 2, seq: 1 })).toBe(true);
    expect(book.scaleSetRef()).toEqual({ scaleSet: { id: 7, name: 'big' } });
    expect(book.plan(T0).create).toBe(3);
    for (const n of ['a', 'b', 'c']) book.runnerStarted(n, T0);
    book.runnerChanged({ name: 'a', seq: 1, status: 'running', runnerStatus: 'active', jobId: 11 }, T0);
    book.runnerChanged({ name: 'b', seq: 1, status: 'running', runnerStatus: 'active', jobId: 12 }, T0);
    // 3 desired, 2 busy: one more runner that is not busy is wanted, and c is it.
    expect(book.demand()).toBe(1);
    expect(book.plan(T0).create).toBe(0);
  });

  it('drops a report older than the one applied, and carries the last one across continue-as-new', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 3, seq: 5 });
    expect(book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 0, seq: 4 })).toBe(false);
    expect(book.demand()).toBe(3);
    const again = new PoolBook(settings(), FAST_TIMINGS, book.carry());
    expect(again.demand()).toBe(3);
  });

  it('applies the first report of a listener that replaced another on the same scale set, whatever its number', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    expect(book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 0, seq: 40, listener: 'run-a' })).toBe(true);
    // The pool continues as new; the listener was stopped and a new one counts from 1 again.
    const next = new PoolBook(settings(), FAST_TIMINGS, book.carry());
    expect(next.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 3, seq: 1, listener: 'run-b' })).toBe(true);
    expect(next.demand()).toBe(3);
    expect(next.plan(T0).create).toBe(3);
    // Its own reports are ordered from there on, across the pool's next continue-as-new too.
    const later = new PoolBook(settings(), FAST_TIMINGS, next.carry());
    expect(later.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 1, seq: 2, listener: 'run-b' })).toBe(true);
    expect(later.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 0, seq: 1, listener: 'run-b' })).toBe(false);
    expect(later.demand()).toBe(1);
  });

  it('keeps ordering reports of listeners that do not name themselves by their number', () => {
    const book = new PoolBook(settings(), FAST_TIMINGS);
    book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 2, seq: 9 });
    expect(book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 0, seq: 8 })).toBe(false);
    // A listener of this code continuing one that did not name itself: heard from its first report.
    expect(book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 1, seq: 9, listener: 'run-a' })).toBe(true);
    expect(book.demand()).toBe(1);
  });

  it('never removes a busy runner when the count drops', () => {
    const book = new PoolBook(settings({ idleTimeout: 0 }), FAST_TIMINGS);
    book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 2, seq: 1 });
    book.runnerStarted('a', T0);
    book.runnerStarted('b', T0);
    book.runnerChanged({ name: 'a', seq: 1, status: 'running', runnerStatus: 'active', jobId: 1 }, T0);
    book.runnerChanged({ name: 'b', seq: 1, status: 'running', runnerStatus: 'idle' }, T0);
    book.scaleSetDemand({ scaleSetId: 7, scaleSetName: 'big', totalAssignedJobs: 0, seq: 2 });
    expect(book.plan(T0 + 10).remove.map((r) => r.name)).toEqual(['b']);
  });
});

describe('scale-set pool settings', () => {
  it('default the scale set name to the pool name', () => {
    expect(scaleSetNameOf(settings())).toBe('big');
    expect(scaleSetNameOf(settings({ scaleSet: { name: 'gpu-large' } }))).toBe('gpu-large');
  });

  it('reject settings that make no sense, naming the field', () => {
    const bad = (o: Partial<PoolSettingsInput>) => poolSettingsSchema.safeParse({ ...settings(), ...o }).error?.issues.map((i) => i.path.join('.'));
    expect(bad({ mode: 'webhook', scaleSet: { minRunners: 1 } })).toEqual(['scaleSet']);
    expect(bad({ scaleSet: { minRunners: 9 } })).toEqual(['scaleSet.minRunners']);
    expect(bad({ scaleSet: { name: 'has space', minRunners: 0 } })).toEqual(['scaleSet.name']);
    expect(bad({ ephemeral: false })).toEqual(['ephemeral']);
  });
});

describe('webhook routing', () => {
  it('leaves jobs to scale-set pools alone: their jobs come through the scale set', () => {
    const memo = { labels: ['linux'], priority: 0, enabled: true, maxRunners: 2, provider: 'fake' };
    const entry = (name: string, mode?: 'scaleSet') => ({ name, workflowId: `pool/${name}`, runId: 'r', startTime: '', memo: { ...memo, ...(mode ? { mode } : {}) } });
    const routed = candidatePools([entry('by-webhook'), entry('by-scale-set', 'scaleSet')], ['linux']);
    expect(routed.kind === 'pools' && routed.pools.map((p) => p.name)).toEqual(['by-webhook']);
    expect(candidatePools([entry('by-scale-set', 'scaleSet')], ['linux']).kind).toBe('none');
  });
});
