/**
 * Scale-out: two worker processes and two API processes against one Temporal
 * server, webhooks spread over both APIs, one worker SIGKILLed in the middle
 * of a burst. Every job still gets a runner and nothing is duplicated, leaked
 * or left open.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { measureOutcome } from '../../devstack/outcome';
import { processStackRequest, startProcessStack, type ProcessStack } from '../../devstack/process-stack';
import { poolWorkflowId } from '../../workflows/pool-messages';
import { eventually, uniqueName } from '../support/temporal';
import { E2E_TIMINGS, e2ePool } from './stack';

const JOBS = 24;
let stack: ProcessStack;
const taskQueue = uniqueName('tq-scale');

beforeAll(async () => {
  stack = await startProcessStack({
    temporalAddress: inject('temporalAddress'),
    taskQueue,
    workers: 2,
    apis: 2,
    workflowBundlePath: inject('workflowBundlePath'),
    config: { timings: E2E_TIMINGS, controllerId: uniqueName('ctl'), sweep: { enabled: false }, liveness: { enabled: false } },
    simulator: { jobDurationMs: 1_500, webhookConcurrency: 8 },
  });
});
afterAll(async () => {
  await stack?.stop();
});

it('two workers and two APIs: a worker SIGKILLed mid-burst loses no job and leaks nothing', async () => {
  const pool = e2ePool('scaleout', { maxRunners: 8 });
  expect((await processStackRequest(stack, 'POST', '/api/v1/pools', pool, 1)).status).toBe(201);
  const labels = ['self-hosted', 'linux', 'scaleout'];
  const ids = new Set(Array.from({ length: JOBS }, () => stack.sim.queueJob({ repository: 'acme/scaleout', labels }).id));

  // Mid-burst: runners are being made and jobs run when the first worker dies.
  await eventually(() => stack.sim.jobs().filter((j) => ids.has(j.id) && j.status !== 'queued').length >= 3, 60_000, 'burst under way');
  await stack.workers[0]!.kill('SIGKILL');

  await eventually(() => stack.sim.jobs().filter((j) => ids.has(j.id) && j.status === 'completed').length === JOBS, 240_000, 'every job completed');
  // Both APIs took webhooks, and took them all.
  expect(new Set(stack.sim.deliveries().map((d) => d.url))).toEqual(new Set(stack.apis.map((a) => `${a.url}/webhooks/github`)));
  expect(new Set(stack.sim.deliveries().map((d) => d.status))).toEqual(new Set([200]));

  expect((await processStackRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`, undefined, 0)).status).toBeLessThan(300);
  await eventually(async () => (await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).describe()).status.name !== 'RUNNING', 60_000, 'pool closed');
  const outcome = await eventually(async () => {
    const o = await measureOutcome({ client: stack.client, taskQueue, sim: stack.sim, machines: stack.machines, jobIds: ids });
    return o.openWorkflows.length === 0 && o.leakedMachines.length === 0 && o.registeredRunners.length === 0 ? o : undefined;
  }, 60_000, 'nothing left open, leaked or registered');
  expect(outcome.jobsRun).toBe(JOBS);
  expect(outcome.jobsSucceeded).toBe(JOBS);
  expect(outcome.duplicateMachines).toEqual([]);
  // Every job on its own runner: a killed create made no second runner of one name.
  expect(new Set(stack.sim.jobs().filter((j) => ids.has(j.id)).map((j) => j.runnerName)).size).toBe(JOBS);
}, 360_000);
