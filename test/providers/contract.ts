/**
 * What every provider promises, whatever it runs on. Each provider's test file
 * calls runProviderContract with a factory for a fresh, isolated provider.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMachines, ProviderError, ProviderNotFoundError, type ProviderCallContext, type ProviderPort } from '../../providers/port';
import { bootstrapFor } from './bootstrap';

export interface ContractSubject {
  provider: ProviderPort;
  /** Releases what the factory set up (temp dirs, servers); machines are deleted by the suite. */
  cleanup?: () => Promise<void> | void;
}

export function runProviderContract(name: string, factory: () => Promise<ContractSubject> | ContractSubject): void {
  describe(`provider contract: ${name}`, () => {
    let subject: ContractSubject;
    const run = randomUUID().slice(0, 8);
    const controllerId = `ctl-${run}`;
    const otherController = `ctl-other-${run}`;
    const made: { id: string; ctx: ProviderCallContext }[] = [];
    const ctxFor = (poolId: string, controller = controllerId): ProviderCallContext => ({ controllerId: controller, poolId });
    const unique = (label: string) => `rf-${label}-${run}`;

    async function create(label: string, poolId = 'pool-a', controller = controllerId) {
      const ctx = ctxFor(poolId, controller);
      const instance = await subject.provider.createInstance(bootstrapFor(unique(label), poolId), ctx);
      made.push({ id: instance.providerId, ctx });
      return instance;
    }

    // Generous: a factory may install and start a local service (moto_server) first.
    beforeAll(async () => {
      subject = await factory();
    }, 300_000);
    afterAll(async () => {
      for (const m of made) await subject.provider.deleteInstance(m.id, m.ctx).catch(() => undefined);
      await subject.provider.close?.();
      await subject.cleanup?.();
    });

    it('creates a machine that get then finds by its provider id', async () => {
      const created = await create('get');
      expect(created.name).toBe(unique('get'));
      expect(created.providerId).not.toBe('');
      const got = await subject.provider.getInstance(created.providerId, ctxFor('pool-a'));
      expect(got).toMatchObject({ providerId: created.providerId, name: unique('get') });
      expect(['running', 'stopped', 'unknown']).toContain(got.status);
      // The orphan sweep dates machines no workflow knew by this; a provider that reports it must report it right.
      if (got.createdAt !== undefined) {
        const age = Date.now() - Date.parse(got.createdAt);
        expect(age).toBeGreaterThanOrEqual(-5_000);
        expect(age).toBeLessThan(10 * 60_000);
      }
    });

    it('makes one machine when the same name is created twice', async () => {
      const first = await create('twice');
      const second = await create('twice');
      expect(second.providerId).toBe(first.providerId);
      const listed = await subject.provider.listInstances(ctxFor('pool-a'));
      expect(listed.filter((i) => i.name === unique('twice'))).toHaveLength(1);
    });

    it('deletes idempotently, including a machine that is already gone', async () => {
      const created = await create('delete');
      await subject.provider.deleteInstance(created.providerId, ctxFor('pool-a'));
      await expect(subject.provider.getInstance(created.providerId, ctxFor('pool-a'))).rejects.toBeInstanceOf(ProviderNotFoundError);
      await subject.provider.deleteInstance(created.providerId, ctxFor('pool-a'));
      await subject.provider.deleteInstance(unique('never-existed'), ctxFor('pool-a'));
      const listed = await subject.provider.listInstances(ctxFor('pool-a'));
      expect(listed.map((i) => i.name)).not.toContain(unique('delete'));
    });

    it("lists exactly this controller's machines, and one pool's when asked", async () => {
      await create('list-a', 'pool-list-a');
      await create('list-b', 'pool-list-b');
      await create('list-other', 'pool-list-a', otherController);
      const names = async (ctx: ProviderCallContext) => (await subject.provider.listInstances(ctx)).map((i) => i.name).filter((n) => n.startsWith('rf-list-')).sort();
      if (subject.provider.listsPerPool) await expect(subject.provider.listInstances({ controllerId })).rejects.toBeInstanceOf(ProviderError);
      else expect(await names({ controllerId })).toEqual([unique('list-a'), unique('list-b')]);
      const everywhere = await listMachines(subject.provider, ['pool-list-a', 'pool-list-b'], { controllerId });
      expect(everywhere.machines.filter((m) => m.name.startsWith('rf-list-')).map((m) => [m.name, m.poolId]).sort()).toEqual([
        [unique('list-a'), 'pool-list-a'],
        [unique('list-b'), 'pool-list-b'],
      ]);
      expect(await names(ctxFor('pool-list-a'))).toEqual([unique('list-a')]);
      expect(await names(ctxFor('pool-list-b'))).toEqual([unique('list-b')]);
      expect(await names(ctxFor('pool-list-a', otherController))).toEqual([unique('list-other')]);
    });

    it('reports a missing machine as a typed ProviderNotFoundError', async () => {
      const err = await subject.provider.getInstance(unique('missing'), ctxFor('pool-a')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderNotFoundError);
      expect(err).toBeInstanceOf(ProviderError);
      expect((err as ProviderNotFoundError).provider).toBe(subject.provider.name);
      expect((err as ProviderNotFoundError).instanceId).toBe(unique('missing'));
    });
  });
}
