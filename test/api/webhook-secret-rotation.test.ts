/**
 * Rotating the webhook's secret loses no job: while `api.previousWebhookSecret` holds the old
 * secret, deliveries GitHub still signs with it are taken as those signed with the new one, and
 * counted, so the operator sees when GitHub has caught up. Any other signature is refused.
 */
import { describe, expect, it } from 'vitest';
import { api, e2ePool, useE2EStack } from '../e2e/stack';
import { sampleSum, scrape } from '../support/prometheus-text';
import { eventually } from '../support/temporal';

const PREVIOUS_SECRET = 'the-secret-before-the-rotation';
process.env.RUNNERFLOW_TEST_PREVIOUS_WEBHOOK_SECRET = PREVIOUS_SECRET;

const stack = useE2EStack({ jobDurationMs: 200 }, { config: { api: { previousWebhookSecret: { env: 'RUNNERFLOW_TEST_PREVIOUS_WEBHOOK_SECRET' } } } });

describe('a webhook secret rotation', () => {
  it('takes deliveries signed with the previous or the current secret, counts the previous, and refuses any other', async () => {
    const pool = e2ePool('rotation', { minIdleRunners: 0, maxRunners: 2 });
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const previousCount = async () => sampleSum((await scrape(`${stack.api.url}/metrics`)).get('runnerflow_webhook_previous_secret_deliveries_total'), {});
    const runJob = async (repository: string) => {
      const job = stack.sim.queueJob({ repository, labels: pool.labels });
      await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, `the job of ${repository} to run`);
      await stack.sim.webhooksIdle();
      return job;
    };

    // GitHub still signs with the old secret: every delivery of the job is taken, and counted.
    const before = await previousCount();
    const deliveriesBefore = stack.sim.deliveries().length;
    stack.sim.setWebhook({ secret: PREVIOUS_SECRET });
    await runJob('acme/rotation');
    const oldSigned = stack.sim.deliveries().slice(deliveriesBefore);
    expect(oldSigned.map((d) => d.status)).toEqual(oldSigned.map(() => 200));
    expect(oldSigned.length).toBeGreaterThanOrEqual(3);
    expect((await previousCount()) - before).toBe(oldSigned.length);

    // GitHub has the new secret: taken, and not counted as the previous one.
    const afterOld = await previousCount();
    const deliveriesMid = stack.sim.deliveries().length;
    stack.sim.setWebhook({ secret: stack.webhookSecret });
    await runJob('acme/rotation');
    const newSigned = stack.sim.deliveries().slice(deliveriesMid);
    expect(newSigned.map((d) => d.status)).toEqual(newSigned.map(() => 200));
    expect(await previousCount()).toBe(afterOld);

    // Neither: refused, and the job is not taken.
    const deliveriesLate = stack.sim.deliveries().length;
    stack.sim.setWebhook({ secret: 'a-secret-runnerflow-never-had' });
    try {
      const refused = stack.sim.queueJob({ repository: 'acme/rotation', labels: pool.labels });
      await stack.sim.webhooksIdle();
      expect(stack.sim.deliveries().slice(deliveriesLate).map((d) => d.status)).toEqual([401]);
      expect(stack.sim.jobs().find((j) => j.id === refused.id)?.status).toBe('queued');
      expect(await previousCount()).toBe(afterOld);
    } finally {
      stack.sim.setWebhook({ secret: stack.webhookSecret });
    }
  });
});
