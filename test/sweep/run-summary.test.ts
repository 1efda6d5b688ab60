import { describe, expect, it } from 'vitest';
import type { SweepReport } from '../../activities/sweep-activities';
import { summariseSweep } from '../../api/dashboard/sweep-runs';

const machines: SweepReport = { provider: 'p', listed: 3, owned: 2, deleted: [{ name: 'gone-1', providerId: 'i-1', reason: 'orphaned' }], skipped: [], failed: [] };

describe("a sweep run's summary for the dashboard", () => {
  it("counts what the GitHub side did: registrations removed, lost jobs routed again, settled jobs taken out", () => {
    const summary = summariseSweep({
      ...machines,
      github: {
        scopes: 1,
        ours: 2,
        owned: 1,
        removed: [{ name: 'r-1', scope: 'repo:acme/app', reason: 'orphaned' }],
        skipped: [],
        failed: [],
        requeued: [{ jobId: 11, repository: 'acme/app' }],
        dequeued: [
          { pool: 'linux', jobId: 21, status: 'completed' },
          { pool: 'linux', jobId: 22, status: 'gone' },
        ],
      },
    });
    expect(summary).toMatchObject({ listed: 3, owned: 2, deleted: 1, deletedNames: ['gone-1'] });
    expect(summary.github).toEqual({ registrationsRemoved: 1, jobsRequeued: 1, jobsDequeued: 2, jobIds: [11, 21, 22] });
  });

  it('names what GitHub refused to the look for lost jobs, only when there is some', () => {
    const github = { scopes: 1, ours: 0, owned: 0, removed: [], skipped: [], failed: [], requeued: [] };
    const summary = summariseSweep({ ...machines, github: { ...github, unreadable: { 'repo:globex/private': 2, 'repo:acme/secret': 1 } } });
    expect(summary.github?.unreadable).toEqual(['repo:acme/secret', 'repo:globex/private']);
    expect(summariseSweep({ ...machines, github: { ...github, unreadable: {} } }).github).not.toHaveProperty('unreadable');
  });

  it('has no GitHub part when the sweep did not look there', () => {
    expect(summariseSweep(machines).github).toBeUndefined();
  });

  it('names at most ten jobs', () => {
    const dequeued = Array.from({ length: 15 }, (_, i) => ({ pool: 'linux', jobId: i, status: 'completed' }));
    const summary = summariseSweep({ ...machines, github: { scopes: 1, ours: 0, owned: 0, removed: [], skipped: [], failed: [], requeued: [], dequeued } });
    expect(summary.github?.jobsDequeued).toBe(15);
    expect(summary.github?.jobIds).toHaveLength(10);
  });
});
