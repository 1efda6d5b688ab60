/**
 * The instance's side of liveness. The reconciler only says what it saw; this
 * decides what that means here, because only the instance knows whether its
 * runner is busy. It costs nothing while no report arrives: no timer, no
 * activity, no history for a healthy runner that idles for days.
 */
import { condition, log, patched } from '@temporalio/workflow';
import { FINDING_REASONS, isMachineFinding, stillDead, type HealthFinding, type HealthObservation } from '../domain/liveness';
import type { InstanceTimings } from '../domain/timings';
import type { InstanceRecord } from './instance-record';
import type { HealthReportArgs } from './messages';

export interface HealthWatchDeps {
  record: InstanceRecord;
  timings: InstanceTimings;
  /** The second look: one provider GetInstance and one GitHub lookup. */
  observe(): Promise<HealthObservation>;
  /** The normal leaving path has taken over (delete requested, runner failed, ephemeral job done). */
  leavingAnyway(): boolean;
}

const isRegistered = (record: InstanceRecord): boolean => record.runnerStatus === 'idle' || record.runnerStatus === 'active';
const describe = (finding: HealthFinding, detail?: string): string => FINDING_REASONS[finding] + (detail ? ` (${detail})` : '');

export class HealthWatch {
  /** Set once the machine is known dead: GitHub may answer "busy" for a job that machine will never finish. */
  machineDead = false;

  constructor(private readonly deps: HealthWatchDeps) {}

  get reported(): boolean {
    return this.deps.record.health !== undefined;
  }

  /** Signal handler: remembers the first finding; repeats from later reconciler passes change nothing. */
  report(args: HealthReportArgs): void {
    const { record } = this.deps;
    // A machine still being created is not reaped: the create activity settles it first.
    if (record.status !== 'running' || record.health) return;
    // A runner that has not come online yet is offline at GitHub by nature; the bootstrap timeout covers it.
    if (!isMachineFinding(args.finding) && !isRegistered(record)) return;
    record.health = { finding: args.finding, ...(args.detail ? { detail: args.detail } : {}), since: new Date().toISOString() };
  }

  /**
   * Weighs the pending finding. Returns why the instance leaves, or undefined when it
   * stays (a second look found it healthy, or the normal path took over meanwhile).
   */
  async settle(): Promise<string | undefined> {
    const { record, timings } = this.deps;
    const pending = record.health;
    if (!pending) return undefined;
    const busy = record.runnerStatus === 'active';
    // A machine one listing left out may only be missing from that listing: clouds list new
    // machines late (EC2's eventual consistency), and an external provider's listing may lag
    // too. It is looked at again after the short grace, as an offline runner is. (patched:
    // instances that left at once on such a finding replay without the look.)
    const unlistedOnly = pending.finding === 'machine_gone' && !busy && patched('second-look-when-an-idle-machine-is-unlisted');
    // No job to lose and the provider says the machine is dead: leave now, the pool replaces it.
    if (isMachineFinding(pending.finding) && !busy && !unlistedOnly) {
      record.health = undefined;
      this.machineDead = true;
      return describe(pending.finding, pending.detail);
    }
    // A busy runner keeps its job through the grace period; an idle runner GitHub calls
    // offline, or whose machine was not listed, is given a shorter one, since GitHub's own
    // status flickers on reconnects.
    const graceMs = busy ? timings.busyRunnerLostGraceMs : timings.runnerOfflineGraceMs;
    await condition(() => this.deps.leavingAnyway() || (busy && record.runnerStatus !== 'active'), graceMs);
    if (this.deps.leavingAnyway()) {
      record.health = undefined;
      return undefined;
    }
    const seen = await this.deps.observe();
    record.health = undefined;
    const dead = stillDead(seen, isRegistered(record));
    if (!dead) {
      log.info('liveness finding not confirmed by a second look', { finding: pending.finding, machine: seen.machine, runner: seen.runner, error: seen.error });
      return undefined;
    }
    if (isMachineFinding(dead)) this.machineDead = true;
    const job = busy && record.jobId !== undefined ? ` while running job ${record.jobId}` : '';
    return `${describe(dead, dead === pending.finding ? pending.detail : undefined)}${job}; still so after the ${Math.round(graceMs / 1000)} s grace period`;
  }
}
