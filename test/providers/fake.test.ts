import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import { ProviderFaultError } from '../../providers/port';
import { bootstrapFor } from './bootstrap';

const ctx = { controllerId: 'ctl-fake', poolId: 'pool-a' };

describe('fake provider', () => {
  let dir: string;
  let provider: FakeProvider;
  let control: FakeProviderControl;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'runnerflow-fake-'));
    provider = new FakeProvider({ name: 'fake', stateDir: dir });
    control = new FakeProviderControl(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('fails and hangs a seeded share of attempts with failRate/hangRate, the same ones for the same seed', async () => {
    const outcomes = async (seed: number): Promise<string[]> => {
      control.setFault('create', { failRate: 0.3, hangRate: 0.1, seed });
      const seen: string[] = [];
      for (let i = 0; i < 100; i++) {
        try {
          await provider.createInstance(bootstrapFor(`rated-${i}`, 'pool-a'), { ...ctx, timeoutMs: 1 });
          seen.push('ok');
        } catch (err) {
          seen.push(err instanceof ProviderFaultError && err.message.includes('timed out') ? 'hang' : 'fail');
        }
        control.removeInstance(`rated-${i}`);
      }
      return seen;
    };
    const first = await outcomes(7);
    const count = (what: string) => first.filter((o) => o === what).length;
    expect(count('fail')).toBeGreaterThan(15);
    expect(count('fail')).toBeLessThan(45);
    expect(count('hang')).toBeGreaterThan(2);
    expect(count('hang')).toBeLessThan(25);
    expect(await outcomes(7)).toEqual(first);
    expect(await outcomes(8)).not.toEqual(first);
  });

  it('shares machines between provider objects (worker processes) through the state directory', async () => {
    await provider.createInstance(bootstrapFor('shared-1', 'pool-a'), ctx);
    const other = new FakeProvider({ name: 'fake', stateDir: dir });
    expect((await other.getInstance('shared-1', ctx)).status).toBe('running');
    expect(control.instances().map((m) => m.name)).toEqual(['shared-1']);
  });

  it('creates one machine when several processes create the same name at once', async () => {
    const script = `
      const { FakeProvider } = await import(${JSON.stringify(new URL('../../providers/fake.ts', import.meta.url).href)});
      const p = new FakeProvider({ name: 'fake', stateDir: ${JSON.stringify(dir)} });
      const boot = { name: 'raced', poolId: 'pool-a', tools: [], labels: [], image: '', flavor: '', osType: 'linux', arch: 'amd64' };
      await p.createInstance(boot, { controllerId: 'ctl-fake' });`;
    const run = promisify(execFile);
    await Promise.all(Array.from({ length: 4 }, () => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script])));
    expect(control.createdCount('raced')).toBe(1);
    expect(control.calls('create').map((c) => c.outcome).sort()).toEqual(['created', 'existing', 'existing', 'existing']);
    expect(new Set(control.calls('create').map((c) => c.pid)).size).toBe(4);
  });

  it('fails the first failTimes attempts, then succeeds, logging each attempt with its time', async () => {
    control.setFault('create', { failTimes: 2, message: 'quota exceeded' });
    const boot = bootstrapFor('retry-1', 'pool-a');
    await expect(provider.createInstance(boot, ctx)).rejects.toThrow(ProviderFaultError);
    await expect(provider.createInstance(boot, ctx)).rejects.toThrow('quota exceeded');
    await provider.createInstance(boot, ctx);
    const calls = control.calls('create');
    expect(calls.map((c) => [c.attempt, c.outcome])).toEqual([
      [1, 'fault'],
      [2, 'fault'],
      [3, 'created'],
    ]);
    expect(calls.every((c) => c.instance === 'retry-1' && c.at <= c.endedAt)).toBe(true);
    expect(control.createdCount('retry-1')).toBe(1);
  });

  it('counts attempts only against a plan: calls without one are logged as attempt 0', async () => {
    await provider.createInstance(bootstrapFor('unplanned', 'pool-a'), ctx);
    await provider.getInstance('unplanned', ctx);
    expect(control.calls().map((c) => [c.op, c.attempt, c.outcome])).toEqual([
      ['create', 0, 'created'],
      ['get', 0, 'found'],
    ]);
    expect(control.attempts('create')).toBe(0);
    control.setFault('get', { failTimes: 1 });
    await expect(provider.getInstance('unplanned', ctx)).rejects.toThrow(ProviderFaultError);
    expect((await provider.getInstance('unplanned', ctx)).name).toBe('unplanned');
    expect(control.calls('get').map((c) => [c.attempt, c.outcome])).toEqual([
      [0, 'found'],
      [1, 'fault'],
      [2, 'found'],
    ]);
  });

  it('fails forever until the plan is cleared', async () => {
    control.setFault('delete', { failForever: true });
    for (let i = 0; i < 3; i++) await expect(provider.deleteInstance('x', ctx)).rejects.toThrow('injected delete fault');
    control.clearFaults();
    await provider.deleteInstance('x', ctx);
    expect(control.calls('delete').map((c) => c.outcome)).toEqual(['fault', 'fault', 'fault', 'absent']);
  });

  it('reads a fault plan written by hand at any time', async () => {
    writeFileSync(join(dir, 'faults.json'), JSON.stringify({ get: { failTimes: 1, message: 'flaky' } }));
    await expect(provider.getInstance('nope', ctx)).rejects.toThrow('flaky');
    await expect(provider.getInstance('nope', ctx)).rejects.toThrow(/not found/);
  });

  it('aims a plan at one instance only', async () => {
    control.setFault('create', { failTimes: 1, instance: 'target' });
    await provider.createInstance(bootstrapFor('bystander', 'pool-a'), ctx);
    await expect(provider.createInstance(bootstrapFor('target', 'pool-a'), ctx)).rejects.toThrow(ProviderFaultError);
    await provider.createInstance(bootstrapFor('target', 'pool-a'), ctx);
    expect(control.instances().map((m) => m.name).sort()).toEqual(['bystander', 'target']);
  });

  it('hangs until the signal aborts, rejecting with the abort reason', async () => {
    control.setFault('create', { hang: true });
    const abort = new AbortController();
    const pending = provider.createInstance(bootstrapFor('hung', 'pool-a'), { ...ctx, signal: abort.signal });
    setTimeout(() => abort.abort(new Error('cancelled by caller')), 50);
    await expect(pending).rejects.toThrow('cancelled by caller');
    expect(control.calls('create')[0]?.outcome).toBe('aborted');
    expect(control.instances()).toEqual([]);
  });

  it('hangs until ctx.timeoutMs when no signal aborts', async () => {
    control.setFault('get', { hang: true });
    await expect(provider.getInstance('x', { ...ctx, timeoutMs: 30 })).rejects.toThrow(/timed out/);
    expect(control.calls('get')[0]?.outcome).toBe('timeout');
  });

  it('delays every attempt by delayMs', async () => {
    control.setFault('list', { delayMs: 80 });
    const started = Date.now();
    await provider.listInstances(ctx);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
  });

  it('lets tests change a machine behind the provider', async () => {
    await provider.createInstance(bootstrapFor('m1', 'pool-a'), ctx);
    control.setStatus('m1', 'error', 'disk failed');
    expect(await provider.getInstance('fake-m1', ctx)).toMatchObject({ status: 'error', providerFault: 'disk failed' });
    control.removeInstance('m1');
    await expect(provider.getInstance('m1', ctx)).rejects.toThrow(/not found/);
    control.addInstance({ name: 'leaked', controllerId: ctx.controllerId, poolId: 'pool-a' });
    expect((await provider.listInstances(ctx)).map((i) => i.name)).toEqual(['leaked']);
  });

  it('never stores the credential, only that there was one', async () => {
    await provider.createInstance({ ...bootstrapFor('cred', 'pool-a'), jitConfig: 'SECRET-JIT' }, ctx);
    expect(control.instance('cred')?.hadCredential).toBe(true);
    expect(JSON.stringify(control.instances())).not.toContain('SECRET-JIT');
  });
});
