/**
 * Which queued runs a sweep lists the jobs of: a bounded number, going round a long backlog
 * over successive sweeps, never a run too young to hold a lost job.
 */
import { describe, expect, it } from 'vitest';
import { QUEUED_RUNS_PER_SWEEP, runsToLookInto } from '../../activities/github-sweep-activities';
import type { QueuedGitHubRun } from '../../github/port';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const AGE = 120_000;
const run = (id: number, ageMs: number): QueuedGitHubRun => ({ id, createdAt: new Date(NOW - ageMs).toISOString() });

describe('runsToLookInto', () => {
  it('leaves out runs younger than the lost-job age', () => {
    const runs = [run(1, AGE + 1), run(2, AGE - 1), run(3, AGE)];
    expect(runsToLookInto(runs, new Map(), NOW, AGE).map((r) => r.id)).toEqual([1, 3]);
  });

  it('looks into at most its bound, runs never looked into first', () => {
    const backlog = Array.from({ length: 60 }, (_, i) => run(1_000 + i, 3_600_000));
    const lookedInto = new Map([
      [1_000, NOW - 10_000],
      [1_001, NOW - 50_000],
    ]);
    const picked = runsToLookInto(backlog, lookedInto, NOW, AGE);
    expect(picked).toHaveLength(QUEUED_RUNS_PER_SWEEP);
    expect(picked.map((r) => r.id)).toEqual(Array.from({ length: QUEUED_RUNS_PER_SWEEP }, (_, i) => 1_002 + i));
  });

  it('goes round a backlog over successive sweeps, the longest ago looked into next', () => {
    const backlog = Array.from({ length: 60 }, (_, i) => run(1_000 + i, 3_600_000));
    const lookedInto = new Map<number, number>();
    const seen: number[][] = [];
    for (let sweep = 0; sweep < 3; sweep++) {
      const at = NOW + sweep * 300_000;
      const picked = runsToLookInto(backlog, lookedInto, at, AGE, 25);
      for (const r of picked) lookedInto.set(r.id, at);
      seen.push(picked.map((r) => r.id));
    }
    // 25 + 25 new ones, then the last 10 and the 15 looked into first.
    expect(new Set([...seen[0]!, ...seen[1]!]).size).toBe(50);
    expect(seen[2]).toEqual([...Array.from({ length: 10 }, (_, i) => 1_050 + i), ...Array.from({ length: 15 }, (_, i) => 1_000 + i)]);
  });
});
