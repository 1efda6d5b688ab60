import { expect, inject } from 'vitest';
import { runChaosCampaign, type ChaosOptions, type ChaosReport } from '../../bench/chaos/campaign';

/** A short campaign on the suite's shared server (which it cannot restart), with what it logged for a failure's message. */
export async function shortCampaign(options: Pick<ChaosOptions, 'lifecycles' | 'seed'> & Partial<ChaosOptions>): Promise<{ report: ChaosReport; context: string }> {
  const lines: string[] = [];
  const report = await runChaosCampaign({
    temporalAddress: inject('temporalAddress'),
    killMachines: true,
    workflowBundlePath: inject('workflowBundlePath'),
    timeLimitMs: 270_000,
    log: (m) => lines.push(m),
    ...options,
  });
  return { report, context: `${lines.join('\n')}\n${JSON.stringify(report, null, 2)}` };
}

/** What every campaign must end with: the weather came, every job ran, and nothing is left anywhere. */
export function expectConverged(report: ChaosReport, context: string, lifecycles: number): void {
  expect(report.injected.temporalRestarts, context).toBe('skipped');
  expect(report.injected.workerKills, context).toBeGreaterThan(0);
  expect(report.injected.apiKills, context).toBeGreaterThan(0);
  expect(report.injected.providerCreateFaults + report.injected.providerDeleteFaults, context).toBeGreaterThan(0);
  expect(report.outcome.jobs, context).toBe(lifecycles);
  expect(report.outcome.jobsNotRun, context).toEqual([]);
  expect(report.outcome.jobsRun, context).toBe(lifecycles);
  expect(report.outcome.leakedMachines, context).toEqual([]);
  expect(report.outcome.duplicateMachines, context).toEqual([]);
  expect(report.outcome.registeredRunners, context).toEqual([]);
  expect(report.outcome.openWorkflows, context).toEqual([]);
  expect(report.settledJobs.stillHeld, context).toEqual([]);
  // Liveness asked no runner to leave for not being counted but those reset after they left.
  expect(report.uncounted.notReset, context).toEqual([]);
}
