/**
 * GitHub never retries a failed webhook delivery. A `queued` that found the API down
 * leaves its job without a runner, unless the failed delivery is asked for again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { redeliveryScheduleId } from '../../worker/redelivery-schedule';
import type { RedeliveryReport } from '../../activities/webhook-redelivery-activities';
import { eventually, uniqueName } from '../support/temporal';
import { api, e2ePool, useE2EStack } from './stack';

const credentials = uniqueName('app').toLowerCase();
const stack = useE2EStack(
  { jobDurationMs: 300 },
  { githubAppCredentials: credentials, config: { redelivery: { interval: '1s', firstDelay: '500ms', maxDelay: '2s', maxAttempts: 5 } } },
);

afterAll(async () => {
  // The schedule lives in the server, not in the stack: without a worker its runs would pile up.
  await stack.client?.schedule.getHandle(redeliveryScheduleId(credentials)).delete().catch(() => undefined);
});

describe('failed webhook deliveries', () => {
  it('a job whose queued webhook found the API down gets its runner once the API is back', async () => {
    const pool = e2ePool('redelivered', { github: { credentials, scope: { kind: 'repo', owner: 'acme', repo: 'redelivered' } } });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const apiHook = `${stack.api.url}/webhooks/github`;

    // The API is out of reach while the job is queued: GitHub records the delivery as failed and leaves it.
    stack.sim.setWebhook({ url: 'http://127.0.0.1:9/webhooks/github' });
    const job = stack.sim.queueJob({ repository: 'acme/redelivered', labels: ['self-hosted', 'linux', 'redelivered'] });
    await stack.sim.webhooksIdle();
    const queuedDelivery = stack.sim.deliveries().find((d) => d.action === 'queued' && d.status === 'error');
    expect(queuedDelivery).toBeDefined();
    stack.sim.setWebhook({ url: apiHook });

    const done = await eventually(() => {
      const j = stack.sim.jobs().find((x) => x.id === job.id);
      return j?.status === 'completed' ? j : undefined;
    }, 45_000, 'the job run on a runner of the pool');
    expect(done.runnerName).toMatch(new RegExp(`^${pool.name}-`));

    // The same delivery (one GUID), sent again at runnerflow's request, reached the API.
    const again = stack.sim.deliveries().filter((d) => d.id === queuedDelivery!.id);
    expect(again.map((d) => d.status)).toContain(200);

    // The schedule's runs say so, and carry what they follow from one run to the next: once
    // the redelivery has been answered, the runs after it no longer follow that delivery.
    const reports = await eventually(async () => {
      const description = await stack.client.schedule.getHandle(redeliveryScheduleId(credentials)).describe();
      const results: RedeliveryReport[] = [];
      for (const action of description.info.recentActions) {
        const handle = stack.client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId);
        if ((await handle.describe()).status.name === 'COMPLETED') results.push((await handle.result()) as RedeliveryReport);
      }
      const asked = results.findIndex((r) => r.redelivered.includes(queuedDelivery!.id));
      return asked >= 0 && results.slice(asked + 1).some((r) => !r.state.failing.some((f) => f.guid === queuedDelivery!.id)) ? results : undefined;
    }, 20_000, 'a pass that asked for the delivery again, and one after it that saw it answered');
    expect(reports.at(-1)!.state.newestId).toBeGreaterThan(0);
  });
});
