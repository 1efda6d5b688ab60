/**
 * GARM's interface v0.1.1 hands an external provider the pool's extra specs on every
 * per-pool command, and providers pick their region, project or account from them. A
 * `regional` test executable plays such a cloud: each call that names the wrong region
 * (or none) sees no machine. Every call about a runner's machine must name the region
 * its create did: the second look, the liveness listing, the sweep's listing and
 * delete, and the graceful delete.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLivenessActivities, type LivenessReport } from '../../activities/liveness-activities';
import { createSweepActivities, type SweepReport } from '../../activities/sweep-activities';
import { deleteSignal, forceDeleteSignal, healthReportSignal, stateQuery } from '../../workflows/messages';
import { livenessCheck } from '../../workflows/liveness-check';
import { providerSweep } from '../../workflows/provider-sweep';
import { waitForStatus } from '../instance/helpers';
import { idleInstance, waitUntilListedRunning } from '../liveness/helpers';
import { useProviderRig, type ProviderRig } from '../support/provider-rig';
import { eventually, uniqueName } from '../support/temporal';
import { externalProviderOnScript, type ExternalScriptFixture, type RecordedCall } from './support/external-script';

const CONTROLLER = 'test-controller';
const rig = useProviderRig<ProviderRig>(
  (r) => ({
    ...createSweepActivities({ controllerId: CONTROLLER, providers: r.providers, client: r.client, namespace: 'default' }),
    ...createLivenessActivities({ controllerId: CONTROLLER, providers: r.providers, github: { get: () => r.github }, client: r.client, namespace: 'default' }),
  }),
  {},
);
const scripts: ExternalScriptFixture[] = [];
afterAll(() => scripts.forEach((s) => s.remove()));

const extraSpecsOf = (call: RecordedCall): unknown => JSON.parse(Buffer.from(call.env.GARM_POOL_EXTRASPECS ?? '', 'base64').toString());
/** Each call of `command` after the first `from` ones, as the executable saw it: the machine or pool it named, and the extra specs. */
const seen = (script: ExternalScriptFixture, command: string, from = 0) =>
  script
    .calls(command)
    .slice(from)
    .map((c) => ({ target: c.env.GARM_INSTANCE_ID ?? c.env.GARM_POOL_ID, extraSpecs: extraSpecsOf(c) }));

function regionalProvider(): { name: string; script: ExternalScriptFixture } {
  const name = uniqueName('garm-regional');
  const { provider, script } = externalProviderOnScript(name, 'v0.1.1', { regional: true });
  scripts.push(script);
  rig.providers.set(name, provider);
  return { name, script };
}

describe('an external v0.1.1 provider whose region comes from the extra specs', () => {
  it('is asked about a machine with the extra specs it was made with: the second look and the graceful delete', async () => {
    const { name: provider, script } = regionalProvider();
    const north = { region: 'north', project: 'p-1' };
    const pool = uniqueName('garm-pool');
    const runner = await idleInstance(rig, provider, { input: { pool }, spec: { extraSpecs: north } });
    expect(seen(script, 'CreateInstance')).toEqual([{ target: pool, extraSpecs: north }]);

    // GitHub calls the runner offline: after its grace period the instance takes a second look.
    const looksBefore = script.calls('GetInstance').length;
    await runner.handle.signal(healthReportSignal, { finding: 'runner_offline', detail: 'test' });
    await eventually(() => (script.calls('GetInstance').length > looksBefore ? true : undefined), 20_000, 'the second look');
    expect(seen(script, 'GetInstance', looksBefore)).toEqual([{ target: `ext-${runner.name}`, extraSpecs: north }]);
    await new Promise((r) => setTimeout(r, 500));
    expect((await runner.handle.query(stateQuery)).status).toBe('running');

    await runner.handle.signal(deleteSignal, { reason: 'test done' });
    expect((await runner.handle.result()).status).toBe('deleted');
    expect(seen(script, 'DeleteInstance')).toEqual([{ target: `ext-${runner.name}`, extraSpecs: north }]);
    expect(script.calls('DeleteInstance').map((c) => c.env.GARM_POOL_ID)).toEqual([pool]);
  });

  it('is asked for a forced delete with the extra specs the machine was made with', async () => {
    const { name: provider, script } = regionalProvider();
    const east = { region: 'east' };
    const pool = uniqueName('garm-pool');
    const runner = await idleInstance(rig, provider, { input: { pool }, spec: { extraSpecs: east } });
    await runner.handle.signal(forceDeleteSignal, { reason: 'operator' });
    // Asked elsewhere, the provider would have answered "not found": confirmed gone, and leaked.
    expect(await runner.handle.result()).toMatchObject({ status: 'deleted', forced: true, leaked: false });
    expect(seen(script, 'DeleteInstance')).toEqual([{ target: `ext-${runner.name}`, extraSpecs: east }]);
  });

  it('lists each pool with the extra specs of its machines, once per distinct value, and finds every machine', async () => {
    const { name: provider, script } = regionalProvider();
    const poolA = uniqueName('garm-pool-a');
    const poolB = uniqueName('garm-pool-b');
    const north = { region: 'north' };
    const south = { region: 'south', zone: 'b' };
    // Pool A's settings changed from north to south while a runner made in the north still runs.
    const oldA = await idleInstance(rig, provider, { input: { pool: poolA }, spec: { extraSpecs: north } });
    const newA = await idleInstance(rig, provider, { input: { pool: poolA }, spec: { extraSpecs: south } });
    const b = await idleInstance(rig, provider, { input: { pool: poolB }, spec: { extraSpecs: { zone: 'b', region: 'south' } } });
    await waitUntilListedRunning(rig, [oldA.name, newA.name, b.name]);
    const listsBefore = script.calls('ListInstances').length;

    const report: LivenessReport = await rig.client.workflow.execute(livenessCheck, {
      taskQueue: rig.worker.taskQueue,
      workflowId: uniqueName(`liveness/${provider}`),
      args: [{ provider, check: 'machines' }],
    });
    expect(report).toMatchObject({ instances: 3, listings: 3, signalled: [], failed: [] });
    const byTarget = (a: { target?: string }, c: { target?: string }) => `${a.target}${JSON.stringify(a)}`.localeCompare(`${c.target}${JSON.stringify(c)}`);
    expect(seen(script, 'ListInstances', listsBefore).sort(byTarget)).toEqual(
      [
        { target: poolA, extraSpecs: north },
        { target: poolA, extraSpecs: south },
        { target: poolB, extraSpecs: south },
      ].sort(byTarget),
    );

    await Promise.all([oldA, newA, b].map(async (i) => {
      await i.handle.signal(deleteSignal, { reason: 'test done' });
      await i.handle.result();
    }));
    expect(script.calls('DeleteInstance')).toHaveLength(3);
  });

  it("has the sweep list and delete a machine left behind with its runner's extra specs", async () => {
    const { name: provider, script } = regionalProvider();
    const pool = uniqueName('garm-pool-orphan');
    const east = { region: 'east' };
    const orphan = await idleInstance(rig, provider, { input: { pool }, spec: { extraSpecs: east } });
    await waitForStatus(orphan.handle, 'running');
    // Terminated: nothing deletes its machine but the sweep.
    await orphan.handle.terminate('operator terminated the workflow');
    await eventually(async () => {
      for await (const info of rig.client.workflow.list({ query: `WorkflowType = 'runnerInstance' AND RunnerName = '${orphan.name}' AND ExecutionStatus = 'Terminated'` })) {
        if (info.workflowId === orphan.handle.workflowId) return true;
      }
      return undefined;
    }, 20_000, 'visibility to list the terminated runner');
    const listsBefore = script.calls('ListInstances').length;

    const report: SweepReport = await rig.client.workflow.execute(providerSweep, {
      taskQueue: rig.worker.taskQueue,
      workflowId: uniqueName(`sweep/${provider}`),
      args: [{ provider, gracePeriodMs: 0 }],
    });
    expect(report).toMatchObject({ listed: 1, failed: [], deleted: [{ name: orphan.name, providerId: `ext-${orphan.name}`, reason: 'orphaned' }] });
    expect(seen(script, 'ListInstances', listsBefore)).toEqual([{ target: pool, extraSpecs: east }]);
    expect(seen(script, 'DeleteInstance')).toEqual([{ target: `ext-${orphan.name}`, extraSpecs: east }]);
  });
});
