import { expect, it } from 'vitest';
import { sweepOutcome } from '../../cli/commands/sweep';
import type { SweepRun } from '../../api/dashboard/sweep-runs';

const run = (result?: SweepRun['result'], error?: string): SweepRun => ({
  workflowId: 'sweep/p-1',
  runId: 'r',
  scheduledAt: '2026-11-29T08:00:00.000Z',
  status: result ? 'completed' : 'failed',
  ...(result ? { result } : {}),
  ...(error ? { error } : {}),
});
const machines = { listed: 5, owned: 4, deleted: 1, skipped: 0, failed: 0, deletedNames: ['m-1'], failures: [] };

it("says what a sweep run did to machines, and at GitHub when it looked there", () => {
  expect(sweepOutcome(run(machines))).toBe('deleted 1 of 5 listed, 0 failed');
  expect(sweepOutcome(run({ ...machines, github: { registrationsRemoved: 2, jobsRequeued: 0, jobsDequeued: 3, jobIds: [7, 8, 9] } }))).toBe(
    'deleted 1 of 5 listed, 0 failed; at GitHub 2 removed, 0 jobs routed again, 3 taken out of a queue',
  );
  expect(sweepOutcome(run({ ...machines, github: { registrationsRemoved: 0, jobsRequeued: 1, jobsDequeued: 0, jobIds: [7], unreadable: ['repo:globex/private'] } }))).toBe(
    "deleted 1 of 5 listed, 0 failed; at GitHub 0 removed, 1 jobs routed again, 0 taken out of a queue, 1 refused (gone, or not the credentials' to read; left alone a while: repo:globex/private)",
  );
  expect(sweepOutcome(run(undefined, 'activity failed: provider unreachable'))).toBe('activity failed: provider unreachable');
  expect(sweepOutcome(undefined)).toBe('');
});
