/**
 * The chaos campaign in scale-set mode, short: the pool is a runner scale set
 * whose listener long-polls the simulated Actions service while the worker is
 * SIGKILLed and restarted, provider creates and deletes fail (some deletes
 * hang), machines die under their runners, runners are reset after they left,
 * and the Actions service takes sessions away, expires tokens, redelivers
 * messages, loses job offers and answers 5xx. The suite's shared server cannot
 * be restarted; bench/chaos.ts --scale-set does that too.
 */
import { expect, it } from 'vitest';
import { ACTIONS_SERVICE_FAULTS } from '../../bench/chaos/campaign';
import { expectConverged, shortCampaign } from './converged';

const LIFECYCLES = 20;
const actionsServiceFaults: readonly string[] = ACTIONS_SERVICE_FAULTS;

it('converges under chaos in scale-set mode, and the scale set goes with its pool', async () => {
  const { report, context } = await shortCampaign({ mode: 'scaleSet', lifecycles: LIFECYCLES, seed: 20_261_126 });
  expect(report.mode, context).toBe('scaleSet');
  expectConverged(report, context, LIFECYCLES);
  // The Actions service's own weather, not webhooks': this mode takes no job from a webhook.
  expect(Object.keys(report.injected.githubFaults).some((kind) => actionsServiceFaults.includes(kind)), context).toBe(true);
  expect(report.injected.webhooksLost + report.injected.webhooksDuplicated, context).toBe(0);
  expect(report.scaleSetsLeft, context).toBe(0);
}, 300_000);
