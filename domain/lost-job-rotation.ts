/**
 * Which of a repository's queued workflow runs a sweep opens to look for jobs whose `queued`
 * webhook was lost. GitHub lists queued jobs only run by run, so every run opened costs a call:
 * a backlog of a thousand queued runs opened on every sweep cost a thousand calls each time,
 * and a 1,000-job chaos campaign ran its installation out of its hourly limit. A sweep opens a
 * bounded number, and successive sweeps go round the backlog.
 *
 * Where the round stands is two run ids per repository, small enough to travel with the sweep
 * schedule from one run to the next (its last completion result): a worker that is restarted,
 * or another worker taking the next sweep, goes on where the last sweep stopped instead of
 * starting again from the oldest runs and never reaching the rest.
 */
import type { QueuedGitHubRun } from '../github/port';

/** Queued runs of one repository a sweep opens, at most. */
export const QUEUED_RUNS_PER_SWEEP = 25;

/**
 * Of that bound, the share kept for runs opened before, when there are any: a job can be queued
 * in a run long after the run itself (a job waiting on others), so old runs are opened again,
 * even while new runs keep coming. Never more than half the bound: an organisation's
 * repositories share one bound, and a repository given only a few runs must still open its new
 * ones.
 */
const REVISITS_PER_SWEEP = 5;

export interface LostJobRotation {
  /** The highest run id ever opened: every run above it is new to the sweep. */
  newest: number;
  /** The run opened last among those opened before: the round goes on above it. */
  cursor: number;
}

/**
 * Runs younger than the lost-job age are left out (their jobs are younger still, and their
 * webhooks may be on the way). Runs never opened come first, oldest first; the rest of the
 * bound, and at least its revisit share, goes round the runs opened before, from the cursor on.
 * GitHub's run ids grow with time, so "above `newest`" means "never opened".
 */
export function runsToLookInto<R extends QueuedGitHubRun>(
  runs: readonly R[],
  rotation: LostJobRotation | undefined,
  now: number,
  lostJobAgeMs: number,
  max = QUEUED_RUNS_PER_SWEEP,
): { picked: R[]; rotation: LostJobRotation } {
  // It comes back from the last run's result: anything but a number starts the round afresh,
  // rather than comparing run ids with it and opening nothing, sweep after sweep.
  const newest = idOrZero(rotation?.newest);
  const cursor = idOrZero(rotation?.cursor);
  const old = runs.filter((run) => now - Date.parse(run.createdAt) >= lostJobAgeMs).sort((a, b) => a.id - b.id);
  const opened = old.filter((run) => run.id <= newest);
  const fresh = old.filter((run) => run.id > newest);
  const revisits = Math.min(opened.length, REVISITS_PER_SWEEP, Math.floor(max / 2));
  const firstTime = fresh.slice(0, max - revisits);
  const again = [...opened.filter((run) => run.id > cursor), ...opened.filter((run) => run.id <= cursor)].slice(0, max - firstTime.length);
  return {
    picked: [...firstTime, ...again],
    rotation: {
      newest: firstTime.at(-1)?.id ?? newest,
      cursor: again.at(-1)?.id ?? cursor,
    },
  };
}

const idOrZero = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
