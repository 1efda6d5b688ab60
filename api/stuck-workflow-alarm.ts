/**
 * A pool whose workflow tasks keep failing on a nondeterminism error decides nothing, and the
 * jobs of its labels wait, until a liveness machine pass resets it (activities/pool-repair.ts).
 * Passes come every `liveness.interval`. The API hears of such a pool first: every read of it
 * (a pool's page, the dashboard, a metrics scrape, a job's routing) is refused with "workflow
 * task in failed state". So a refused read asks for the pool's provider's machine pass now,
 * instead of leaving the pool to wait for the next one.
 *
 * A runner's workflow can get stuck the same way; the same pass ends it, for the clean-up every
 * ended runner gets, so a refused read of a runner calls for its provider's pass too.
 *
 * One ask per provider every `minGapMs`: every read of a stuck pool is refused alike, and one
 * pass looks at all of the provider's pools and runners. A pass already running is not doubled (the
 * schedule skips overlapping runs); one that ran too early for the pool's failures to count
 * is followed by the next ask, once the gap has passed.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from './deps';
import { livenessScheduleId } from '../worker/liveness-schedule';
import type { PoolDirectory } from './pool-directory';
import { isWorkflowTaskFailing } from './temporal/errors';
import { RUNNER_PROVIDER } from '../workflows/search-attributes';

export interface StuckWorkflowAlarmDeps {
  client: Client;
  pools: PoolDirectory;
  logger: Logger;
  /** False when liveness passes are turned off in the config: the operator chose no repairs. */
  enabled: boolean;
  minGapMs: number;
}

export class StuckWorkflowAlarm {
  private readonly lastAsked = new Map<string, number>();
  private readonly runnerLooked = new Map<string, number>();

  constructor(private readonly deps: StuckWorkflowAlarmDeps) {}

  /** Told of every failed read of a pool. Never throws, and never holds up the read's caller. */
  heardPool(pool: string, err: unknown): void {
    if (!this.deps.enabled || !isWorkflowTaskFailing(err)) return;
    this.askForPass(pool).catch((error: unknown) =>
      this.deps.logger.warn('could not ask for a liveness pass for a pool whose workflow tasks are failing', { pool, error: (error as Error).message }),
    );
  }

  /** Told of every failed read of a runner's workflow. Never throws, and never holds up the read's caller. */
  heardRunner(workflowId: string, err: unknown): void {
    if (!this.deps.enabled || !isWorkflowTaskFailing(err)) return;
    // Its provider costs a describe: once per runner every gap, however often it is read.
    const now = Date.now();
    if (now - (this.runnerLooked.get(workflowId) ?? Number.NEGATIVE_INFINITY) < this.deps.minGapMs) return;
    this.runnerLooked.set(workflowId, now);
    for (const [id, at] of this.runnerLooked) if (now - at >= this.deps.minGapMs) this.runnerLooked.delete(id);
    this.runnerProvider(workflowId)
      .then((provider) => (provider ? this.askProvidersPass(provider, { runner: workflowId }) : undefined))
      .catch((error: unknown) =>
        this.deps.logger.warn("could not ask for a liveness pass for a runner whose workflow tasks are failing", { workflowId, error: (error as Error).message }),
      );
  }

  private async runnerProvider(workflowId: string): Promise<string | undefined> {
    const description = await this.deps.client.workflow.getHandle(workflowId).describe();
    return description.typedSearchAttributes.get(RUNNER_PROVIDER);
  }

  private async askForPass(pool: string): Promise<void> {
    const provider = (await this.deps.pools.list()).find((p) => p.name === pool)?.memo?.provider;
    if (provider) await this.askProvidersPass(provider, { pool });
  }

  private async askProvidersPass(provider: string, about: { pool: string } | { runner: string }): Promise<void> {
    const now = Date.now();
    if (now - (this.lastAsked.get(provider) ?? Number.NEGATIVE_INFINITY) < this.deps.minGapMs) return;
    this.lastAsked.set(provider, now);
    const scheduleId = livenessScheduleId(provider, 'machines');
    await this.deps.client.schedule.getHandle(scheduleId).trigger();
    this.deps.logger.warn("a workflow's tasks are failing: its provider's liveness pass asked for now, to mend it", { ...about, provider, scheduleId });
  }
}
