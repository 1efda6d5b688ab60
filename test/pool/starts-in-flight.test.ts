/**
 * A pool's decision may start hundreds of runners. Sent all at once, the server spent seconds on
 * nothing but those starts while the worker waited, then the other way round; so the start step
 * keeps a few dozen under way at a time. Here the step is the worker's own, on a client whose
 * interceptor counts the starts under way, and a pool asks for more runners than that at once.
 */
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createPoolActivities, STARTS_IN_FLIGHT, type StartRunnersArgs } from '../../activities/pool-activities';
import { runnerWorkflowId } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { eventually, useTestWorker } from '../support/temporal';
import { poolSettings, startPool } from './helpers';

const RUNNERS = STARTS_IN_FLIGHT + 8;

let underWay = 0;
let mostUnderWay = 0;
let started = 0;
const counting: WorkflowClientInterceptor = {
  async start(input, next) {
    underWay++;
    mostUnderWay = Math.max(mostUnderWay, underWay);
    try {
      const runId = await next(input);
      started++;
      return runId;
    } finally {
      underWay--;
    }
  },
};

function startRunnersCounted(args: StartRunnersArgs) {
  // As the worker's own step does: a client on the worker's connection, which eager starts need.
  const eagerStarts = new Client({ connection: env.w.connection, interceptors: { workflow: [counting] } });
  return createPoolActivities({ client: env.client, eagerStarts }).startRunners(args);
}

const env = useTestWorker({ extraActivities: { startRunners: startRunnersCounted } });

describe("a pool's start step", () => {
  it(`keeps at most ${STARTS_IN_FLIGHT} starts under way, and starts every runner the pool decided on`, async () => {
    const settings = poolSettings({ minIdleRunners: RUNNERS, maxRunners: RUNNERS });
    const pool = await startPool(env.client, env.w.taskQueue, { settings });
    try {
      const names = await eventually(async () => {
        const runners = (await pool.query(poolStateQuery)).runners.map((r) => r.name);
        return runners.length === RUNNERS && started === RUNNERS ? runners : undefined;
      }, 30_000, `${RUNNERS} runners started`);
      // One decision asked for every runner, so the step had more starts than its bound to make.
      expect(mostUnderWay).toBe(STARTS_IN_FLIGHT);
      for (const name of names) await env.client.workflow.getHandle(runnerWorkflowId(name)).describe();
    } finally {
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  }, 90_000);
});
