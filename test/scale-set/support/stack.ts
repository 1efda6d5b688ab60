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
  return new Promise<string>((done, fail) =>
    execFile(
      process.execPath,
      [resolve(import.meta.dirname, '../../../bin/runnerflow.js'), 'pool', 'show', name],
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
    const shown = Object.fromEntries(['runner_group', 'labels'].map((field) => [field, family ? sampleSum(family, { pool, field }) : 0]));
    return JSON.stringify(shown) === JSON.stringify({ runner_group: 0, labels: 0, ...expected }) ? true : undefined;
  }, 20_000, `runnerflow_scale_set_differs of ${pool} at ${JSON.stringify(expected)}`);
}
