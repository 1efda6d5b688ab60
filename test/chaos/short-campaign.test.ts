/**
 * The chaos campaign, short: a few dozen lifecycles with a fixed seed. It runs
 * against the suite's shared dev server, which it cannot restart, so the one
 * step it leaves out is the Temporal server restart (bench/chaos.ts does it).
 * Everything else is as in the full campaign: worker SIGKILLs and restarts,
 * provider create/delete failures and hanging deletes, lost and duplicated
 * webhooks, GitHub 5xx and secondary rate limits, machines killed, runners
 * reset after they left.
 */
import { expect, inject, it } from 'vitest';
import { runChaosCampaign } from '../../bench/chaos/campaign';

const LIFECYCLES = 24;

it('converges under chaos: every job run, nothing leaked, duplicated, registered or left open', async () => {
  const lines: string[] = [];
  const report = await runChaosCampaign({
    temporalAddress: inject('temporalAddress'),
    lifecycles: LIFECYCLES,
    seed: 20_261_123,
    killMachines: true,
    workflowBundlePath: inject('workflowBundlePath'),
    timeLimitMs: 270_000,
    log: (m) => lines.push(m),
  });
  const context = `${lines.join('\n')}\n${JSON.stringify(report, null, 2)}`;
  expect(report.injected.temporalRestarts, context).toBe('skipped');
  expect(report.injected.workerKills, context).toBeGreaterThan(0);
  expect(report.injected.providerCreateFaults + report.injected.providerDeleteFaults, context).toBeGreaterThan(0);
  expect(report.injected.runnerResets, context).toBeGreaterThan(0);
  expect(report.outcome.jobs, context).toBe(LIFECYCLES);
  expect(report.outcome.jobsNotRun, context).toEqual([]);
  expect(report.outcome.jobsRun, context).toBe(LIFECYCLES);
  expect(report.outcome.leakedMachines, context).toEqual([]);
  expect(report.outcome.duplicateMachines, context).toEqual([]);
  expect(report.outcome.registeredRunners, context).toEqual([]);
  expect(report.outcome.openWorkflows, context).toEqual([]);
  // Liveness asked no runner to leave for not being counted but those reset after they left.
  expect(report.uncounted.notReset, context).toEqual([]);
}, 300_000);
