/**
 * Job routing reads the pools from visibility, which lags a pool's start. A
 * pool this process just created is listed anyway, so a job queued for it at
 * once is routed to it instead of being recorded as unmatched.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { candidatePools } from '../../api/job-routing';
import { PoolDirectory, type PoolEntry } from '../../api/pool-directory';
import { poolMemoOf } from '../../workflows/pool-memo';
import { poolSettings } from '../pool/helpers';

/** Visibility as a list the test controls. */
function visibility(): { client: Client; show(workflowIds: string[]): void } {
  let shown: string[] = [];
  const client = {
    workflow: {
      async *list() {
        for (const workflowId of shown) {
          yield { workflowId, runId: 'r', startTime: new Date(0), memo: { labels: ['linux'], priority: 0, enabled: true, maxRunners: 1, provider: 'fake' } } as unknown as WorkflowExecutionInfo;
        }
      },
    },
  } as unknown as Client;
  return { client, show: (ids) => (shown = ids) };
}

/** Visibility listing these pools' workflows with these memos. */
function visibilityOf(memos: Record<string, unknown>): Client {
  return {
    workflow: {
      async *list() {
        for (const [workflowId, memo] of Object.entries(memos)) yield { workflowId, runId: 'r', startTime: new Date(0), memo } as unknown as WorkflowExecutionInfo;
      },
    },
  } as unknown as Client;
}

/** Visibility whose reads wait until the test lets them through, counted; `fail` makes the next reads throw. */
function gatedVisibility(): { client: Client; show(workflowIds: string[]): void; release(): void; reads(): number; fail(on: boolean): void } {
  let shown: string[] = [];
  let reads = 0;
  let failing = false;
  let gate: { promise: Promise<void>; open: () => void } | undefined;
  const newGate = () => {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    return { promise, open };
  };
  const client = {
    workflow: {
      async *list() {
        reads += 1;
        const ids = shown;
        gate ??= newGate();
        await gate.promise;
        if (failing) throw new Error('visibility unavailable');
        for (const workflowId of ids) {
          yield { workflowId, runId: 'r', startTime: new Date(0), memo: { labels: ['linux'], priority: 0, enabled: true, maxRunners: 1, provider: 'fake' } } as unknown as WorkflowExecutionInfo;
        }
      },
    },
  } as unknown as Client;
  return {
    client,
    show: (ids) => (shown = ids),
    release: () => {
      gate?.open();
      gate = undefined;
    },
    reads: () => reads,
    fail: (on) => (failing = on),
  };
}

/** Settles within a few event-loop turns, or reports that it is still pending. */
async function settledSoon<T>(promise: Promise<T>): Promise<{ value: T } | 'pending'> {
  return Promise.race([promise.then((value) => ({ value })), new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 20))]);
}

const names = (pools: PoolEntry[]) => pools.map((p) => p.name);

/** The directory's first list, read through the gate from visibility showing `workflowIds`. */
async function firstList(v: ReturnType<typeof gatedVisibility>, pools: PoolDirectory, workflowIds: string[]): Promise<void> {
  v.show(workflowIds);
  const first = pools.list();
  v.release();
  expect(names(await first)).toEqual(workflowIds.map((id) => id.slice('pool/'.length)));
}

const entry = (name: string, maxRunners = 1): PoolEntry => ({
  name,
  workflowId: `pool/${name}`,
  runId: 'run',
  startTime: new Date().toISOString(),
  memo: { labels: ['linux'], priority: 0, enabled: true, maxRunners, provider: 'fake' },
});

describe('the pool directory', () => {
  it('lists a pool this process started before visibility does, once', async () => {
    const v = visibility();
    const pools = new PoolDirectory(v.client, 60_000);
    expect(await pools.list()).toEqual([]);
    pools.poolStarted(entry('fresh'));
    expect((await pools.list()).map((p) => p.name)).toEqual(['fresh']);
    v.show(['pool/fresh']);
    pools.invalidate();
    expect((await pools.list()).map((p) => p.workflowId)).toEqual(['pool/fresh']);
  });

  it('lists a started pool with the settings it was last given, and no more once it is deleted', async () => {
    const v = visibility();
    const pools = new PoolDirectory(v.client, 60_000);
    pools.poolStarted(entry('sized'));
    pools.poolChanged('pool/sized', entry('sized', 7).memo!);
    expect((await pools.list()).map((p) => p.memo?.maxRunners)).toEqual([7]);
    pools.poolDeleted('pool/sized');
    expect(await pools.list()).toEqual([]);
  });

  it('serves the last list while a newer one is read once it is older than its lifetime, and the newer one after', async () => {
    const v = gatedVisibility();
    const pools = new PoolDirectory(v.client, 1);
    await firstList(v, pools, ['pool/a']);

    v.show(['pool/a', 'pool/b']);
    await new Promise((resolve) => setTimeout(resolve, 2));
    // Past its lifetime: answered at once with the list it has, a read under way meanwhile.
    expect(await settledSoon(pools.list())).toEqual({ value: [expect.objectContaining({ name: 'a' })] });
    expect(await settledSoon(pools.list())).toEqual({ value: [expect.objectContaining({ name: 'a' })] });
    expect(v.reads()).toBe(2);
    v.release();
    await new Promise((resolve) => setTimeout(resolve, 2));
    const next = pools.list();
    v.release();
    expect(names(await next)).toEqual(['a', 'b']);
  });

  it('makes a caller that asks for a fresh list wait for a new read, and no one else', async () => {
    const v = gatedVisibility();
    const pools = new PoolDirectory(v.client, 60_000);
    await firstList(v, pools, ['pool/a']);

    v.show(['pool/a', 'pool/new']);
    const fresh = pools.fresh();
    const alsoFresh = pools.fresh();
    expect(await settledSoon(fresh)).toBe('pending');
    // Jobs that match a listed pool are routed meanwhile.
    expect(await settledSoon(pools.list())).toEqual({ value: [expect.objectContaining({ name: 'a' })] });
    v.release();
    expect(names(await fresh)).toEqual(['a', 'new']);
    expect(names(await alsoFresh)).toEqual(['a', 'new']);
    expect(v.reads()).toBe(2);
    // The fresh read is what everyone is served from now on.
    expect(names(await pools.list())).toEqual(['a', 'new']);
  });

  it('reads on every call when its lifetime is 0', async () => {
    const v = gatedVisibility();
    const pools = new PoolDirectory(v.client, 0);
    await firstList(v, pools, ['pool/a']);
    v.show([]);
    const second = pools.list();
    expect(await settledSoon(second)).toBe('pending');
    v.release();
    expect(names(await second)).toEqual([]);
  });

  it('keeps serving the last list when a newer read fails, and reports a failed first read to its caller', async () => {
    const v = gatedVisibility();
    v.fail(true);
    const pools = new PoolDirectory(v.client, 1);
    const failing = pools.list();
    v.release();
    await expect(failing).rejects.toThrow('visibility unavailable');

    v.fail(false);
    await firstList(v, pools, ['pool/a']);

    v.fail(true);
    await new Promise((resolve) => setTimeout(resolve, 2));
    expect(names(await pools.list())).toEqual(['a']);
    v.release();
    const fresh = pools.fresh();
    v.release();
    await expect(fresh).rejects.toThrow('visibility unavailable');
    expect(names(await pools.list())).toEqual(['a']);
  });

  it('does not serve a read begun before an invalidation', async () => {
    const v = gatedVisibility();
    const pools = new PoolDirectory(v.client, 60_000);
    v.show(['pool/old']);
    const before = pools.fresh();
    pools.invalidate();
    v.show([]);
    v.release();
    expect(names(await before)).toEqual(['old']);
    const after = pools.list();
    v.release();
    expect(names(await after)).toEqual([]);
  });

  it('keeps a scale-set pool out of webhook routing when it reads the pools from visibility', async () => {
    const webhook = poolSettings({ name: 'linux', labels: ['linux'], maxRunners: 5 });
    const scaleSet = poolSettings({ name: 'arc-linux', mode: 'scaleSet', ephemeral: true, labels: ['self-hosted', 'linux'], maxRunners: 20, scaleSet: { name: 'arc-linux' } });
    const memos: Record<string, unknown> = { 'pool/linux': poolMemoOf(webhook), 'pool/arc-linux': poolMemoOf(scaleSet) };
    const client = visibilityOf(memos);
    const listed = await new PoolDirectory(client, 0).fetch();
    expect(listed.find((p) => p.name === 'arc-linux')?.memo?.mode).toBe('scaleSet');
    // The scale set has more room, but its runners take only the jobs the scale set assigns them.
    const candidates = candidatePools(listed, ['self-hosted', 'linux'], 'acme/widgets');
    expect(candidates).toMatchObject({ kind: 'pools', pools: [{ name: 'linux' }] });
    // Its scale set's name comes through too: a job for it is its listener's, not unmatched.
    expect(listed.find((p) => p.name === 'arc-linux')?.memo?.scaleSet).toEqual({ name: 'arc-linux', runnerGroup: 'Default', credentials: 'default' });
    expect(candidatePools(listed, ['arc-linux'], 'acme/widgets')).toMatchObject({ kind: 'scaleSet', pools: [{ name: 'arc-linux' }] });
  });

  it('reads a memo’s credentials, runner prefix and glance digests, and drops any of them that is misshapen, keeping the rest', async () => {
    const counts = { counts: { alive: 1, idle: 1, busy: 0, starting: 0, leaving: 0 }, statuses: { running: 1 }, agents: { idle: 1 }, queuedJobs: 0, desired: 1, minIdleRunners: 1, at: 1 };
    const digest = { count: 1, digest: '0123456789abcdef' };
    const memos: Record<string, unknown> = {
      'pool/good': { ...poolMemoOf(poolSettings({ name: 'good', runnerPrefix: 'ci' })), glance: { ...counts, online: digest, repositories: digest } },
      'pool/odd': { ...poolMemoOf(poolSettings({ name: 'odd' })), credentials: 7, runnerPrefix: '', glance: { ...counts, online: { count: 'one', digest: 'x' }, repositories: 'abc' } },
    };
    const client = visibilityOf(memos);
    const listed = await new PoolDirectory(client, 0).fetch();
    expect(listed.find((p) => p.name === 'good')?.memo).toMatchObject({ credentials: 'default', runnerPrefix: 'ci', glance: { ...counts, online: digest, repositories: digest } });
    const odd = listed.find((p) => p.name === 'odd')?.memo;
    expect(odd).toBeDefined();
    expect(odd).not.toHaveProperty('credentials');
    expect(odd).not.toHaveProperty('runnerPrefix');
    // The counts are still believed; only the digests' shortcuts are lost: their readers ask the pool.
    expect(odd?.glance).toEqual(counts);
  });

  it('leaves a pool being deleted out of routing, from its memo and at once where this process deleted it', async () => {
    const settings = (name: string) => poolSettings({ name, labels: ['gpu'] });
    const memos: Record<string, unknown> = {
      'pool/draining': { ...poolMemoOf(settings('draining')), deleting: true },
      'pool/gpu-a': poolMemoOf(settings('gpu-a')),
      'pool/gpu-b': poolMemoOf(settings('gpu-b')),
    };
    const client = visibilityOf(memos);
    const pools = new PoolDirectory(client, 60_000);
    const routed = async () => {
      const candidates = candidatePools(await pools.list(), ['gpu'], 'acme/widgets');
      return candidates.kind === 'none' ? candidates.reason : candidates.pools.map((p) => p.name);
    };
    // Visibility shows the mark the pool wrote.
    expect(await routed()).toEqual(['gpu-a', 'gpu-b']);
    // Deleted here: left out before visibility shows its mark.
    pools.poolDeleted('pool/gpu-a');
    expect(await routed()).toEqual(['gpu-b']);
    // A pool of that name created again is routed to.
    pools.poolStarted({ name: 'gpu-a', workflowId: 'pool/gpu-a', runId: 'r2', startTime: new Date().toISOString(), memo: poolMemoOf(settings('gpu-a')) });
    expect(await routed()).toEqual(['gpu-a', 'gpu-b']);
  });
});
