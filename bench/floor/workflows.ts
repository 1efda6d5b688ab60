/**
 * The least a runner workflow can cost the Temporal server: the shape of an
 * ephemeral runner's life (started with its search attributes; three signals:
 * agent online, job started, job completed; `RunnerStatus` upserted when it runs
 * and when it is gone, which is as often as runnerflow's runners write their
 * visibility record) with nothing else. No activities, no local activities, no
 * reports to a pool.
 * `signals` and `upserts` take parts away, to price each (bench/server-floor.ts).
 */
import { condition, defineSignal, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { RUNNER_STATUS } from '../../workflows/search-attributes';

export interface FloorStep {
  step: 'idle' | 'jobStarted' | 'jobCompleted';
}
export const floorStepSignal = defineSignal<[FloorStep]>('floorStep');

export interface FloorInput {
  /** Signals to wait for before closing (a runner gets 3). */
  signals: number;
  /** Whether `RunnerStatus` is upserted in the first task and the last, as a runner's is. */
  upserts: boolean;
}

export async function floorLifecycle({ signals, upserts }: FloorInput): Promise<number> {
  let seen = 0;
  setHandler(floorStepSignal, () => {
    seen += 1;
  });
  if (upserts) upsertSearchAttributes([{ key: RUNNER_STATUS, value: 'running' }]);
  await condition(() => seen >= signals);
  if (upserts) upsertSearchAttributes([{ key: RUNNER_STATUS, value: 'deleted' }]);
  return seen;
}
