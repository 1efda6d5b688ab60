/**
 * The least a runner workflow can cost the Temporal server: the shape of an
 * ephemeral runner's life (started with its search attributes; three signals:
 * agent online, job started, job completed; `RunnerStatus` upserted when it runs
 * and when it is gone, which is as often as runnerflow's runners write their
 * visibility record) with nothing else. No activities, no local activities, no
 * reports to a pool.
 * `signals` and `upserts` take parts away, to price each (bench/server-floor.ts);
 * `localActivities` adds the local activities a runner runs, each doing nothing.
 */
import { condition, defineSignal, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type * as floorActivities from './activities';
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
  /**
   * Local activities that do nothing, where a runner runs its own: the create in the first
   * task, its report of the job's start, then its delete and its report of that in the last.
   */
  localActivities?: number;
}

const { floorStep } = proxyLocalActivities<typeof floorActivities>({ startToCloseTimeout: 10_000 });

export async function floorLifecycle({ signals, upserts, localActivities = 0 }: FloorInput): Promise<number> {
  let seen = 0;
  let ran = 0;
  const step = async (): Promise<void> => {
    if (ran >= localActivities) return;
    ran += 1;
    await floorStep();
  };
  setHandler(floorStepSignal, () => {
    seen += 1;
  });
  await step();
  if (upserts) upsertSearchAttributes([{ key: RUNNER_STATUS, value: 'running' }]);
  await condition(() => seen >= Math.min(2, signals));
  await step();
  await condition(() => seen >= signals);
  await step();
  await step();
  if (upserts) upsertSearchAttributes([{ key: RUNNER_STATUS, value: 'deleted' }]);
  return seen;
}
