/**
 * Which queued runs a sweep lists the jobs of: a bounded number, going round a long backlog
 * over successive sweeps from where the last one stopped, never a run too young to hold a
 * lost job, and new runs first without leaving the old ones behind for good.
 */
import { describe, expect, it } from 'vitest';
import { QUEUED_RUNS_PER_SWEEP, runsToLookInto, type LostJobRotation } from '../../domain/lost-job-rotation';
import type { QueuedGitHubRun } from '../../github/port';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const AGE = 120_000;
const run = (id: number, ageMs: number): QueuedGitHubRun => ({ id, createdAt: new Date(NOW - ageMs).toISOString() });
const backlogOf = (count: number, firstId = 1_000) => Array.from({ length: count }, (_, i) => run(firstId + i, 3_600_000));
const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

/** Sweeps in a row, each given the rotation the one before returned. */
function sweeps(runsAt: (sweep: number) => QueuedGitHubRun[], count: number, max = QUEUED_RUNS_PER_SWEEP): number[][] {
  let rotation: LostJobRotation | undefined;
  const seen: number[][] = [];
  for (let sweep = 0; sweep < count; sweep++) {
    const result = runsToLookInto(runsAt(sweep), rotation, NOW, AGE, max);
    rotation = result.rotation;
    seen.push(result.picked.map((r) => r.id));
  }
  return seen;
}

describe('runsToLookInto', () => {
  it('leaves out runs younger than the lost-job age, and opens the oldest first', () => {
    const runs = [run(3, AGE), run(1, AGE + 1), run(2, AGE - 1)];
    const { picked, rotation } = runsToLookInto(runs, undefined, NOW, AGE);
    expect(picked.map((r) => r.id)).toEqual([1, 3]);
    expect(rotation).toEqual({ newest: 3, cursor: 0 });
  });

  it('opens at most its bound, and goes round a backlog from where the last sweep stopped', () => {
    const backlog = backlogOf(60);
    const seen = sweeps(() => backlog, 4);
    expect(seen.every((picked) => picked.length === QUEUED_RUNS_PER_SWEEP)).toBe(true);
    // Never-opened runs first (less the share kept for opening old ones again), oldest first.
    expect(seen[0]).toEqual(ids(1_000, 25));
    expect(seen[1]).toEqual([...ids(1_025, 20), ...ids(1_000, 5)]);
    expect(seen[2]).toEqual([...ids(1_045, 15), ...ids(1_005, 10)]);
    // Every run opened within three sweeps; the fourth goes on round the old ones, without repeats.
    expect(new Set(seen.slice(0, 3).flat()).size).toBe(60);
    expect(seen[3]).toEqual([...ids(1_015, 25)]);
  });

  it('comes back round to the start of the backlog', () => {
    const backlog = backlogOf(30);
    const seen = sweeps(() => backlog, 4, 10);
    expect(seen[0]).toEqual(ids(1_000, 10));
    expect(seen[1]).toEqual([...ids(1_010, 5), ...ids(1_000, 5)]);
    expect(seen[2]).toEqual([...ids(1_015, 5), ...ids(1_005, 5)]);
    expect(seen[3]).toEqual([...ids(1_020, 5), ...ids(1_010, 5)]);
    const after = sweeps(() => backlog, 7, 10);
    // Once every run is opened, a sweep opens ten old ones, wrapping past the newest to the oldest.
    expect(after[5]).toEqual([...ids(1_020, 10)]);
    expect(after[6]).toEqual([...ids(1_000, 10)]);
  });

  it('opens a new run at the next sweep once the backlog has been opened, and still goes round the old ones', () => {
    const backlog = backlogOf(1_000);
    // The backlog takes 50 sweeps to open once. Then one new run comes, then 40 new ones a sweep: more than the bound.
    const runsAt = (sweep: number) => [...backlog, ...(sweep >= 50 ? [run(5_000, 3_600_000)] : []), ...backlogOf(Math.max(0, sweep - 50) * 40, 6_000)];
    const seen = sweeps(runsAt, 60);
    expect(new Set(seen.slice(0, 50).flat()).size).toBe(1_000);
    expect(seen[50]).toContain(5_000);
    for (const picked of seen.slice(51)) {
      expect(picked.filter((id) => id >= 6_000)).toHaveLength(20);
      expect(picked.filter((id) => id < 5_000)).toHaveLength(5);
    }
    // The old runs opened again are never the same ones twice within a round.
    const revisited = seen.slice(50).flatMap((picked) => picked.filter((id) => id < 5_000));
    expect(new Set(revisited).size).toBe(revisited.length);
  });

  it('goes on from a cursor whose run is no longer queued', () => {
    const rotation: LostJobRotation = { newest: 1_059, cursor: 1_030 };
    const stillQueued = backlogOf(60).filter((r) => r.id !== 1_030 && r.id !== 1_031);
    const { picked } = runsToLookInto(stillQueued, rotation, NOW, AGE, 5);
    expect(picked.map((r) => r.id)).toEqual(ids(1_032, 5));
  });

  it('starts the round afresh from a rotation that is not two numbers', () => {
    const backlog = backlogOf(10);
    for (const broken of [{ newest: 'x', cursor: null }, {}, { newest: Number.NaN, cursor: 3 }] as unknown as LostJobRotation[]) {
      const { picked, rotation } = runsToLookInto(backlog, broken, NOW, AGE, 4);
      expect(picked.map((r) => r.id)).toEqual(ids(1_000, 4));
      expect(rotation.newest).toBe(1_003);
    }
  });

  it('opens new runs even under a bound of a few, as an organisation repository\'s share is', () => {
    const opened = backlogOf(20);
    const rotation: LostJobRotation = { newest: 1_019, cursor: 1_010 };
    const withNew = [...opened, run(2_000, 3_600_000), run(2_001, 3_600_000)];
    expect(runsToLookInto(withNew, rotation, NOW, AGE, 1).picked.map((r) => r.id)).toEqual([2_000]);
    expect(runsToLookInto(withNew, rotation, NOW, AGE, 3).picked.map((r) => r.id)).toEqual([2_000, 2_001, 1_011]);
    // With nothing new, the bound goes round the old ones.
    expect(runsToLookInto(opened, rotation, NOW, AGE, 3).picked.map((r) => r.id)).toEqual([1_011, 1_012, 1_013]);
  });
});
