/**
 * A scale set's jobs reach it through its listener, not through webhooks: one waiting for a runner
 * (the pool at its maximum) is neither routed, nor recorded as a job no pool takes, nor taken by
 * the sweep for a job whose `queued` webhook was lost. The simulator sends the webhooks of scale-set
 * jobs too, as GitHub does to an organisation that has a webhook.
 */
import { describe, expect, it } from 'vitest';
import { PoolDirectory } from '../../api/pool-directory';
import type { JobRoute } from '../../api/routes/jobs';
import { apiRequest, SIMULATED_PROVIDER } from '../../devstack/stack';
import type { PoolSettingsInput } from '../../domain/pool';
import { poolStateQuery, poolWorkflowId, type UnmatchedJob } from '../../workflows/pool-messages';
import { providerSweep } from '../../workflows/provider-sweep';
import { eventually, uniqueName } from '../support/temporal';
import { listeningPool, runnerflowCli, useScaleSetStack } from './support/stack';

const stack = useScaleSetStack();

async function unmatchedIds(): Promise<number[]> {
  const res = await apiRequest(stack, 'GET', '/api/v1/jobs/unmatched');
  return (res.body as { jobs: UnmatchedJob[] }).jobs.map((j) => j.jobId);
}

/** A webhook pool of the organisation acme with no room, taking `label`, once the pool list shows it. */
async function webhookPoolFor(label: string): Promise<PoolSettingsInput & { name: string }> {
  const pool = {
    name: uniqueName('p').toLowerCase().slice(0, 40),
    github: { credentials: 'default', scope: { kind: 'org' as const, org: 'acme' } },
    labels: [label],
    provider: SIMULATED_PROVIDER,
    maxRunners: 0,
  };
  expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
  const directory = new PoolDirectory(stack.client, 0);
  await eventually(async () => ((await directory.fetch()).some((p) => p.name === pool.name && p.memo) ? true : undefined), 30_000, 'the webhook pool listed');
  return pool;
}

/** A sweep of the simulated provider that looks for lost jobs at once, in every repository it may. */
function sweepForLostJobs() {
  return stack.client.workflow.execute(providerSweep, {
    taskQueue: stack.loaded.config.temporal.taskQueue,
    workflowId: uniqueName(`sweep/${SIMULATED_PROVIDER}`),
    args: [{ provider: SIMULATED_PROVIDER, gracePeriodMs: 3_600_000, githubRunners: true, lostJobAgeMs: 0, lostJobRepositories: 20, lostJobRound: 5 }],
  });
}

describe("a scale set's job waiting for a runner", () => {
  it('is left to its listener: not routed, not unmatched, not taken for a lost job by the sweep', async () => {
    const { pool } = await listeningPool(stack, { maxRunners: 0 });
    // A webhook pool in the same organisation, so that the sweep does look into its repositories.
    const label = uniqueName('wh').toLowerCase();
    await webhookPoolFor(label);
    const repository = `acme/${uniqueName('app').toLowerCase()}`;

    const waiting = stack.sim.queueJob({ repository, labels: [pool.name] });
    const noPool = stack.sim.queueJob({ repository, labels: [uniqueName('nothing-has-this').toLowerCase()] });
    // The webhook pool's job, whose queued webhook is lost: the sweep's to find.
    stack.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: 1 });
    const lost = stack.sim.queueJob({ repository, labels: [label] });
    await stack.sim.webhooksIdle();
    // The intake: the job of no pool is recorded as unmatched, the scale set's is not.
    await eventually(async () => ((await unmatchedIds()).includes(noPool.id) ? true : undefined), 10_000, 'the job no pool takes recorded');
    expect(await unmatchedIds()).not.toContain(waiting.id);

    // Looked for by id: no pool holds it yet, and the answer says where it waits.
    const find = await apiRequest(stack, 'GET', `/api/v1/jobs/${waiting.id}`);
    expect(find.status).toBe(404);
    expect(JSON.stringify(find.body)).toContain(`or it is a scale set's job waiting for a runner`);
    expect(JSON.stringify(find.body)).toContain(pool.name);
    // Asked where such a job goes: to the scale set, by its listener.
    const route = (await apiRequest(stack, 'GET', `/api/v1/jobs/route?labels=${pool.name}&repository=${repository}`)).body as JobRoute;
    expect(route).toMatchObject({ pools: [], scaleSetPools: [pool.name] });
    expect(route.reason).toContain(`scale set ${pool.name} (pool ${pool.name})`);
    expect(await runnerflowCli(stack, ['jobs', 'route', '--labels', pool.name, '--repository', repository])).toContain('a scale set takes it, not job routing');

    const report = await sweepForLostJobs();
    // It looked into the repository, and found the webhook pool's lost job; the scale set's, still
    // queued at GitHub and known to no webhook pool, it left alone.
    expect(Object.keys(report.github?.lostJobRotation ?? {})).toContain(`repo:${repository}`);
    expect(report.github?.requeued.map((j) => j.jobId).sort()).toEqual([noPool.id, lost.id].sort());
    expect(await unmatchedIds()).not.toContain(waiting.id);
    expect(stack.sim.jobs().find((j) => j.id === waiting.id)?.status).toBe('queued');

    // Room at last: the listener gives it a runner.
    expect((await apiRequest(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 1 })).status).toBe(202);
    await eventually(() => stack.sim.jobs().find((j) => j.id === waiting.id && j.status === 'completed'), 30_000, "the scale set's job run");
  });

  it('is not looked for at all where only scale sets take jobs', async () => {
    const { pool } = await listeningPool(stack, { maxRunners: 0, github: { credentials: 'default', scope: { kind: 'org', org: 'scale-sets-only' } } });
    const waiting = stack.sim.queueJob({ repository: 'scale-sets-only/app', labels: [pool.name] });
    await stack.sim.webhooksIdle();
    const report = await sweepForLostJobs();
    // Its organisation's repositories were not looked into: no listing, no call.
    expect(Object.keys(report.github?.lostJobRotation ?? {}).filter((key) => key.startsWith('repo:scale-sets-only/'))).toEqual([]);
    expect(Object.keys(report.github?.repositoryRound ?? {})).not.toContain('org:scale-sets-only');
    expect(report.github?.requeued.map((j) => j.jobId)).not.toContain(waiting.id);
    expect(await unmatchedIds()).not.toContain(waiting.id);
  });

  it("is left to the scale set when the webhook pool that held it goes: a label moved from a webhook pool to a scale set", async () => {
    // The webhook pool and the scale set answer to the same label; a webhook pool is routed the job first.
    const label = uniqueName('moved').toLowerCase();
    const webhookPool = await webhookPoolFor(label);
    const { pool } = await listeningPool(stack, { maxRunners: 0, scaleSet: { name: label } });
    const job = stack.sim.queueJob({ repository: 'acme/moving', labels: [label] });
    const held = stack.client.workflow.getHandle(poolWorkflowId(webhookPool.name));
    await eventually(async () => ((await held.query(poolStateQuery)).queuedJobs.some((j) => j.jobId === job.id) ? true : undefined), 20_000, 'the webhook pool to hold the job');

    // The webhook pool is deleted: its queue is passed on, and this job goes to no pool and to no unmatched record.
    expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${webhookPool.name}`)).status).toBeLessThan(300);
    await held.result();
    expect(await unmatchedIds()).not.toContain(job.id);
    expect((await apiRequest(stack, 'PUT', `/api/v1/pools/${pool.name}`, { ...pool, maxRunners: 1 })).status).toBe(202);
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, "the job run by the scale set's runner");
    expect(await unmatchedIds()).not.toContain(job.id);
  });
});
