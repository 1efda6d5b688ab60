import { describe, expect, it } from 'vitest';
import { listMachines, ProviderFaultError, type ProviderCallContext, type ProviderInstance, type ProviderPort } from '../../providers/port';

const machine = (name: string, poolId?: string): ProviderInstance => ({ providerId: `id-${name}`, name, addresses: [], status: 'running', ...(poolId ? { poolId } : {}) });

/** A provider answering ListInstances from a table by pool; a pool mapped to an Error fails. */
function providerOf(byPool: Record<string, ProviderInstance[] | Error>, listsPerPool: boolean): { port: ProviderPort; asked: (string | undefined)[] } {
  const asked: (string | undefined)[] = [];
  const unused = () => Promise.reject(new Error('not used'));
  const port: ProviderPort = {
    name: 'table',
    listsPerPool,
    createInstance: unused,
    deleteInstance: unused,
    getInstance: unused,
    async listInstances(ctx: ProviderCallContext) {
      asked.push(ctx.poolId);
      const answer = byPool[ctx.poolId ?? ''];
      if (answer instanceof Error) throw answer;
      return answer ?? [];
    },
  };
  return { port, asked };
}

describe('listMachines', () => {
  it('lists once, without a pool, for a provider that lists everything at once', async () => {
    const { port, asked } = providerOf({ '': [machine('a', 'p1'), machine('b', 'p2')] }, false);
    expect(await listMachines(port, ['p1', 'p2'], { controllerId: 'c' })).toEqual({ machines: [machine('a', 'p1'), machine('b', 'p2')], listings: 1, failed: [] });
    expect(asked).toEqual([undefined]);
  });

  it('lists each pool once for a provider that lists per pool, marking machines with the pool they were listed under', async () => {
    const { port, asked } = providerOf({ p1: [machine('a'), machine('shared')], p2: [machine('b', 'p2'), machine('shared')] }, true);
    const listing = await listMachines(port, ['p2', 'p1', 'p2', ''], { controllerId: 'c' });
    expect(asked.sort()).toEqual(['p1', 'p2']);
    expect(listing.listings).toBe(2);
    expect(listing.machines.map((m) => [m.name, m.poolId]).sort()).toEqual([
      ['a', 'p1'],
      ['b', 'p2'],
      ['shared', 'p1'],
    ]);
  });

  it("reports a pool whose listing failed and keeps the others' machines; fails only when no pool could be listed", async () => {
    const fault = new ProviderFaultError('table', 'ListInstances failed (exit code 1)');
    const { port } = providerOf({ p1: [machine('a')], p2: fault }, true);
    expect(await listMachines(port, ['p1', 'p2'], { controllerId: 'c' })).toEqual({ machines: [machine('a', 'p1')], listings: 1, failed: [{ poolId: 'p2', error: fault }] });
    await expect(listMachines(port, ['p2'], { controllerId: 'c' })).rejects.toBe(fault);
    expect(await listMachines(port, [], { controllerId: 'c' })).toEqual({ machines: [], listings: 0, failed: [] });
  });
});
