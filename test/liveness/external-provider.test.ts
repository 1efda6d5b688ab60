/**
 * The machine pass against a GARM external provider executable, which refuses to
 * list without a pool (and, in v0.1.1, to get or delete without one): the pass
 * lists once per pool of the running instances and merges what it hears.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stateQuery } from '../../workflows/messages';
import { externalProviderOnScript, type ExternalScriptFixture } from '../providers/support/external-script';
import { uniqueName } from '../support/temporal';
import { idleInstance, runLiveness, useLivenessRig } from './helpers';

const rig = useLivenessRig();
const scripts: ExternalScriptFixture[] = [];
afterAll(() => scripts.forEach((s) => s.remove()));

describe.each(['v0.1.0', 'v0.1.1'] as const)('machine pass on an external provider %s', (interfaceVersion) => {
  it('lists each pool of the running instances, finds the machine that vanished and leaves the others be', async () => {
    const name = uniqueName(`garm-${interfaceVersion.replaceAll('.', '')}`);
    const { provider, script } = externalProviderOnScript(name, interfaceVersion);
    scripts.push(script);
    rig.providers.set(name, provider);
    const poolA = uniqueName('garm-pool-a');
    const poolB = uniqueName('garm-pool-b');
    const gone = await idleInstance(rig, name, { input: { pool: poolA } });
    const healthyA = await idleInstance(rig, name, { input: { pool: poolA } });
    const healthyB = await idleInstance(rig, name, { input: { pool: poolB } });
    rmSync(join(script.dir, 'state', 'instances', `${encodeURIComponent(gone.name)}.json`));
    const listsBefore = script.calls('ListInstances').length;

    const report = await runLiveness(rig, { provider: name, check: 'machines' });
    expect(report).toMatchObject({ instances: 3, listings: 2, signalled: [{ name: gone.name, finding: 'machine_gone' }], failed: [] });
    const lists = script.calls('ListInstances').slice(listsBefore);
    expect(lists.map((c) => c.env.GARM_POOL_ID).sort()).toEqual([poolA, poolB].sort());

    const final = await gone.handle.result();
    expect(final.status).toBe('deleted');
    expect(final.transitions.find((t) => t.to === 'pending_delete')?.reason).toMatch(new RegExp(`^machine gone \\(not listed by provider ${name}\\); still so after the \\d+ s grace period$`));
    for (const healthy of [healthyA, healthyB]) expect((await healthy.handle.query(stateQuery)).status).toBe('running');
    await Promise.all([healthyA, healthyB].map(async (i) => {
      await i.handle.signal('forceDelete', { reason: 'test done' });
      await i.handle.result();
    }));
  });
});
