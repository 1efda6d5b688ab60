import type { Client, WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { poolSettingsSchema, type PoolSettingsInput } from '../../domain/pool';
import { runnerWorkflowId, runnerStatusSignal, stateQuery } from '../../workflows/messages';
import { PoolDirectory } from '../../api/pool-directory';
import { GLANCE_TIMER_SUMMARY, jobQueuedSignal, poolStateQuery, poolWorkflowId, type PoolView, type RunnerPoolInput } from '../../workflows/pool-messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { runnerPool } from '../../workflows/runner-pool';
import { eventually, FAST_TIMINGS, uniqueName } from '../support/temporal';

export function poolSettings(overrides: Partial<PoolSettingsInput> = {}) {
  return poolSettingsSchema.parse({
    name: uniqueName('pool').toLowerCase().slice(0, 40),
    github: { scope: { kind: 'repo', owner: 'acme', repo: 'widgets' } },
    labels: ['linux'],
    provider: 'fake',
    maxRunners: 5,
    bootstrapTimeout: 20_000,
    idleTimeout: 60_000,
    ...overrides,
  });
}

export async function startPool(client: Client, taskQueue: string, input: Partial<RunnerPoolInput> & { settings: RunnerPoolInput['settings'] }) {
  return client.workflow.start(runnerPool, {
    taskQueue,
    workflowId: poolWorkflowId(input.settings.name),
    args: [{ timings: FAST_TIMINGS, ...input }],
  });
}

/**
 * Plays the part of runner agents that come online: every runner of the pool
 * that is running but has not reported yet is told it is idle.
 */
export function autoRegister(client: Client, pool: WorkflowHandle<typeof runnerPool>): { stop(): void; registered: Set<string> } {
  const registered = new Set<string>();
  let stopped = false;
  void (async () => {
    while (!stopped) {
      try {
        const view = await pool.query(poolStateQuery);
        for (const r of view.runners) {
          if (r.runnerStatus !== 'pending' || registered.has(r.name)) continue;
          const runner = client.workflow.getHandle(runnerWorkflowId(r.name));
          // The pool hears of a runner again only once it reports; ask the runner itself.
          if ((await runner.query(stateQuery)).status !== 'running') continue;
          registered.add(r.name);
          await runner.signal(runnerStatusSignal, { status: 'idle' });
        }
      } catch {
        // The pool may be continuing as new or finished; try again.
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  return { stop: () => (stopped = true), registered };
}

export function idleRunners(view: PoolView): string[] {
  return view.runners.filter((r) => r.runnerStatus === 'idle').map((r) => r.name);
}

/** The timer a pool starts to write its glance once `poolGlanceInterval` is over: not one of its deadlines. */
export const isGlanceTimer = (event: temporal.api.history.v1.IHistoryEvent): boolean =>
  new TextDecoder().decode(event.userMetadata?.summary?.data ?? new Uint8Array()).includes(GLANCE_TIMER_SUMMARY);

/**
 * A pool of no runners, started with the memo the API gives it and its glance written at every
 * change, that hears of jobs queued from the repositories it is given: what the checks that read
 * an organisation's or enterprise's recent repositories look at.
 */
export async function poolHearingRepositories(client: Client, taskQueue: string, settings: ReturnType<typeof poolSettings>) {
  const pool = await client.workflow.start(runnerPool, {
    taskQueue,
    workflowId: poolWorkflowId(settings.name),
    args: [{ settings, timings: { ...FAST_TIMINGS, poolGlanceIntervalMs: 0 } }],
    memo: { ...poolMemoOf(settings) },
  });
  const directory = new PoolDirectory(client, 0);
  return {
    pool,
    /** Waits for visibility to show the pool's glance with this many recent repositories. */
    listedRepositories: (count: number) =>
      eventually(async () => ((await directory.fetch()).find((p) => p.name === settings.name)?.memo?.glance?.repositories?.count === count ? true : undefined), 20_000, `visibility to list a glance of ${count} repositories`),
    queue: (jobId: number, repository: string) => pool.signal(jobQueuedSignal, { jobId, labels: settings.labels, repository, queuedAt: new Date().toISOString() }),
  };
}
