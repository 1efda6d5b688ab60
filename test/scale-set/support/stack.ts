import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import type { Client } from '@temporalio/client';
import { apiRequest, startDevStack, SIMULATED_PROVIDER, type DevStack } from '../../../devstack/stack';
import type { PoolSettingsInput } from '../../../domain/pool';
import { scaleSetListenerId, scaleSetStateQuery, type ScaleSetView } from '../../../workflows/scale-set-messages';
import { E2E_TIMINGS } from '../../e2e/stack';
import { sampleSum, scrape } from '../../support/prometheus-text';
import { eventually, uniqueName } from '../../support/temporal';

/** Scale-set timings at test speed: short long polls, quick conflict retries. */
export const SCALE_SET_SIM = { longPollMs: 1_000, sessionIdleTimeoutMs: 4_000, onError: () => undefined, webhookConcurrency: 8 };
export const SCALE_SET_TIMINGS = { ...E2E_TIMINGS, scaleSetPollTimeout: 5_000, scaleSetConflictRetry: 500 };

export function useScaleSetStack(jobDurationMs = 1_000, timings: Record<string, unknown> = {}): DevStack {
  const stack = {} as DevStack;
  beforeAll(async () => {
    Object.assign(
      stack,
      await startDevStack({
        temporalAddress: inject('temporalAddress'),
        taskQueue: uniqueName('tq-ss'),
        machines: 'simulated',
        workflowBundlePath: inject('workflowBundlePath'),
        config: { timings: { ...SCALE_SET_TIMINGS, ...timings }, controllerId: uniqueName('ctl'), sweep: { enabled: false } },
        simulator: { ...SCALE_SET_SIM, jobDurationMs },
      }),
    );
  });
  afterAll(async () => {
    await stack.stop?.();
  });
  return stack;
}

export function scaleSetPool(overrides: Partial<PoolSettingsInput> = {}): PoolSettingsInput & { name: string } {
  const name = uniqueName('ss').toLowerCase().slice(0, 40);
  return {
    name,
    mode: 'scaleSet',
    github: { credentials: 'default', scope: { kind: 'org', org: 'acme' } },
    labels: ['self-hosted', 'linux'],
    provider: SIMULATED_PROVIDER,
    maxRunners: 2,
    bootstrapTimeout: 20_000,
    idleTimeout: 500,
    ...overrides,
  };
}

export async function listenerState(client: Client, pool: string): Promise<ScaleSetView | undefined> {
  try {
    return await client.workflow.getHandle(scaleSetListenerId(pool)).query(scaleSetStateQuery);
  } catch {
    return undefined;
  }
}

/** What `runnerflow pool show NAME` prints against the stack's API. */
export function poolShow(stack: DevStack, name: string): Promise<string> {
  return runnerflowCli(stack, ['pool', 'show', name]);
}

/** What the CLI prints for `args` against the stack's API (it fails on a non-zero exit). */
export function runnerflowCli(stack: DevStack, args: string[]): Promise<string> {
  return new Promise<string>((done, fail) =>
    execFile(
      process.execPath,
      [resolve(import.meta.dirname, '../../../bin/runnerflow.js'), ...args],
      { env: { PATH: process.env.PATH ?? '', RUNNERFLOW_URL: stack.api.url, RUNNERFLOW_ADMIN_TOKEN: stack.adminToken }, timeout: 30_000 },
      (error, stdout) => (error ? fail(error) : done(stdout)),
    ),
  );
}

/** A new scale-set pool made through the API, once its listener holds a session on its scale set. */
export async function listeningPool(
  stack: DevStack,
  overrides: Partial<PoolSettingsInput> = {},
): Promise<{ pool: ReturnType<typeof scaleSetPool>; first: ScaleSetView; scaleSetId: number }> {
  const pool = scaleSetPool(overrides);
  expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
  const first = await eventually(async () => {
    const s = await listenerState(stack.client, pool.name);
    return s?.status === 'listening' && s.sessionId && s.scaleSetId !== undefined ? s : undefined;
  }, 30_000, 'the listener listening');
  return { pool, first, scaleSetId: first.scaleSetId! };
}

/** Waits for /metrics (cached a few seconds) to show `runnerflow_scale_set_differs` of the pool at `expected`, by field (0 for those not named). */
export async function scaleSetDiffersShown(stack: DevStack, pool: string, expected: Record<string, number>): Promise<void> {
  await eventually(async () => {
    const family = (await scrape(`${stack.api.url}/metrics`)).get('runnerflow_scale_set_differs');
    const shown = Object.fromEntries(['runner_group', 'name', 'labels'].map((field) => [field, family ? sampleSum(family, { pool, field }) : 0]));
    return JSON.stringify(shown) === JSON.stringify({ runner_group: 0, name: 0, labels: 0, ...expected }) ? true : undefined;
  }, 20_000, `runnerflow_scale_set_differs of ${pool} at ${JSON.stringify(expected)}`);
}

/**
 * The listener the pool started again after `firstRun` ended, once it listens and `ok` holds:
 * what a successor finishes of the work its predecessor left.
 */
export async function successorListening(stack: DevStack, pool: string, firstRun: string, ok: (s: ScaleSetView) => boolean, what: string): Promise<ScaleSetView> {
  const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool));
  return eventually(async () => {
    const d = await handle.describe().catch(() => undefined);
    if (d?.status.name !== 'RUNNING' || d.runId === firstRun) return undefined;
    const s = await listenerState(stack.client, pool);
    return s?.status === 'listening' && ok(s) ? s : undefined;
  }, 60_000, what);
}

/** The listener's view once `ok` holds of it. */
export function listenerWhen(stack: DevStack, pool: string, ok: (s: ScaleSetView) => boolean, what: string, timeoutMs = 20_000): Promise<ScaleSetView> {
  return eventually(async () => {
    const s = await listenerState(stack.client, pool);
    return s && ok(s) ? s : undefined;
  }, timeoutMs, what);
}

/** A job for `runsOn`, queued and run to its end. */
export async function runsAJob(stack: DevStack, runsOn: string): Promise<void> {
  const job = stack.sim.queueJob({ repository: 'acme/app', labels: [runsOn] });
  await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, `a job for ${runsOn} run`);
}

/** Deletes the pool through the API and waits for its listener to end (with its scale set). */
export async function deletePool(stack: DevStack, pool: string): Promise<void> {
  expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool}`)).status).toBeLessThan(300);
  await stack.client.workflow.getHandle(scaleSetListenerId(pool)).result();
}
