import { expect, it } from 'vitest';
import { redeliveryOutcome } from '../../cli/commands/redelivery';
import type { RedeliveryRun } from '../../api/dashboard/redelivery-runs';

const run = (result: RedeliveryRun['result']): RedeliveryRun => ({ workflowId: 'redelivery/token-1', runId: 'r', scheduledAt: '2026-12-07T08:00:00.000Z', status: 'completed', ...(result ? { result } : {}) });
const pass = { examined: 12, redelivered: 1, givenUp: 0, failing: 0, truncated: false, failures: [] };

it("says what a redelivery pass did, with the webhooks it followed and an enterprise's organisations whose webhooks the token may not list", () => {
  expect(redeliveryOutcome(run({ ...pass, hooks: ['org:acme hook 3'] }))).toBe('asked again 1, given up 0, still failing 0, 1 webhook followed');
  expect(redeliveryOutcome(run({ ...pass, hooks: ['org:acme hook 3'], unreadable: ['org:globex (for enterprise:big)'] }))).toBe(
    'asked again 1, given up 0, still failing 0, 1 webhook followed, webhooks not listed to these credentials: org:globex (for enterprise:big)',
  );
  expect(redeliveryOutcome(undefined)).toBe('');
});
