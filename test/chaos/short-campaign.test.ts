/**
 * The chaos campaign, short: a few dozen lifecycles with a fixed seed. It runs
 * against the suite's shared dev server, which it cannot restart, so the one
 * step it leaves out is the Temporal server restart (bench/chaos.ts does it).
 * Everything else is as in the full campaign: worker SIGKILLs and restarts,
 * provider create/delete failures and hanging deletes, lost and duplicated
 * webhooks, GitHub 5xx and secondary rate limits, machines killed, runners
 * reset after they left.
 */
import { expect, it } from 'vitest';
import { WEBHOOK_FAULTS } from '../../bench/chaos/campaign';
import { expectConverged, shortCampaign } from './converged';

const webhookFaults: readonly string[] = WEBHOOK_FAULTS;

const LIFECYCLES = 24;

it('converges under chaos: every job run, nothing leaked, duplicated, registered or left open', async () => {
  const { report, context } = await shortCampaign({ lifecycles: LIFECYCLES, seed: 20_261_123 });
  expectConverged(report, context, LIFECYCLES);
  expect(report.injected.runnerResets, context).toBeGreaterThan(0);
  // The webhooks' own weather came: lost, duplicated, unreachable or late deliveries.
  expect(Object.keys(report.injected.githubFaults).some((kind) => webhookFaults.includes(kind)), context).toBe(true);
}, 300_000);
