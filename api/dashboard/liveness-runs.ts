/**
 * The liveness checks as operators follow them: each provider's two schedules
 * (`liveness/<provider>` for machines, `liveness/<provider>/github` for runners),
 * and what their last passes found and asked to leave.
 */
import type { Client } from '@temporalio/client';
import type { LivenessCheck, LivenessReport } from '../../activities/liveness-activities';
import type { HealthFinding } from '../../domain/liveness';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import { scheduleView, type ScheduledRun, type ScheduleView } from './schedule-runs';

/** Counts from one pass's report, with the first few names. */
export interface LivenessResult {
  /** Running runners of the provider the pass looked at. */
  instances: number;
  /** Provider listings (machine pass) or GitHub scopes listed (GitHub pass). */
  listings: number;
  /** Runners told what the pass found wrong; each takes a second look before it leaves. */
  findings: { name: string; finding: HealthFinding }[];
  /** Runners asked to leave because their pool no longer runs. */
  orphaned: string[];
  /** Runners asked to leave because their pool does not count them. */
  uncounted: string[];
  /** Pools found stuck on a nondeterminism error and reset. */
  poolsReset: { pool: string; resetTo: number }[];
  /** Runner workflows stuck on a nondeterminism error, terminated for the sweep to clean up after. */
  stuckRunnersEnded: string[];
  /** Pools whose glance kept disagreeing with the runners listed for them, asked to look for runners that ended unreported. */
  poolsAskedToLook: { pool: string; why: string }[];
  /** How many of each the pass had, when more than the names shown. */
  counts: { findings: number; orphaned: number; uncounted: number; poolsReset: number; stuckRunnersEnded: number; poolsAskedToLook: number };
  failures: { target: string; error: string }[];
}

export type LivenessRun = ScheduledRun<LivenessResult>;
export type ProviderLiveness = { provider: string; check: LivenessCheck } & ScheduleView<LivenessResult>;

/** A few names are enough to recognise a pass; the full report is in the Web UI. */
const NAMES_SHOWN = 10;

// Passes recorded before a runner could be found uncounted have no such list.
function summarise(report: Omit<LivenessReport, 'uncounted'> & { uncounted?: LivenessReport['uncounted'] }): LivenessResult {
  const uncounted = report.uncounted ?? [];
  return {
    instances: report.instances,
    listings: report.listings,
    findings: report.signalled.slice(0, NAMES_SHOWN),
    orphaned: report.orphaned.slice(0, NAMES_SHOWN).map((o) => o.name),
    uncounted: uncounted.slice(0, NAMES_SHOWN).map((u) => u.name),
    poolsReset: (report.repaired ?? []).slice(0, NAMES_SHOWN).map(({ pool, resetTo }) => ({ pool, resetTo })),
    stuckRunnersEnded: (report.stuckRunnersEnded ?? []).slice(0, NAMES_SHOWN).map((r) => r.name),
    poolsAskedToLook: (report.poolsAskedToLook ?? []).slice(0, NAMES_SHOWN),
    counts: {
      findings: report.signalled.length,
      orphaned: report.orphaned.length,
      uncounted: uncounted.length,
      poolsReset: report.repaired?.length ?? 0,
      stuckRunnersEnded: report.stuckRunnersEnded?.length ?? 0,
      poolsAskedToLook: report.poolsAskedToLook?.length ?? 0,
    },
    failures: report.failed.slice(0, NAMES_SHOWN),
  };
}

export async function providerLiveness(client: Client, provider: string, check: LivenessCheck, runsShown: number): Promise<ProviderLiveness> {
  return { provider, check, ...(await scheduleView(client, livenessScheduleId(provider, check), runsShown, summarise)) };
}
