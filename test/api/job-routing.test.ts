import { describe, expect, it } from 'vitest';
import { candidatePools, freeCapacity, freeCapacityOfGlance, mostFree } from '../../api/job-routing';
import type { PoolEntry } from '../../api/pool-directory';
import type { PoolView } from '../../workflows/pool-messages';

const pool = (name: string, labels: string[], priority = 0, enabled = true): PoolEntry => ({
  name,
  workflowId: `pool/${name}`,
  runId: 'r',
  startTime: '2026-01-01T00:00:00.000Z',
  memo: { labels, priority, enabled, maxRunners: 5, provider: 'fake' },
});

describe('candidatePools', () => {
  it('matches labels case-insensitively with self-hosted implied', () => {
    const result = candidatePools([pool('a', ['Linux', 'X64']), pool('b', ['windows'])], ['self-hosted', 'linux', 'x64']);
    expect(result).toEqual({ kind: 'pools', pools: [expect.objectContaining({ name: 'a' })] });
  });

  it('keeps only the highest priority among enabled matches', () => {
    const pools = [pool('low', ['gpu'], 1), pool('high-1', ['gpu'], 5), pool('high-2', ['gpu', 'big'], 5), pool('off', ['gpu'], 9, false)];
    const result = candidatePools(pools, ['gpu']);
    expect(result.kind === 'pools' && result.pools.map((p) => p.name)).toEqual(['high-1', 'high-2']);
  });

  it("leaves a job to a scale set that takes it when no webhook pool does: GitHub offers it to the scale set's listener", () => {
    const scaleSetPool = (name: string, setName: string | undefined, labels: string[], extra: Partial<NonNullable<PoolEntry['memo']>> = {}): PoolEntry => ({
      ...pool(name, labels),
      memo: { ...pool(name, labels).memo!, mode: 'scaleSet', ...(setName ? { scaleSet: { name: setName, runnerGroup: 'default', credentials: 'default' } } : {}), scope: { kind: 'org', org: 'acme' }, ...extra },
    });
    const big = scaleSetPool('big', 'Linux-Large', ['self-hosted', 'linux']);
    const names = (c: ReturnType<typeof candidatePools>) => (c.kind === 'none' ? c.reason : `${c.kind}: ${c.pools.map((p) => p.name).join(', ')}`);
    // By its name, or by its name and labels, without case; `self-hosted` aside.
    expect(names(candidatePools([big], ['linux-large'], 'acme/app'))).toBe('scaleSet: big');
    expect(names(candidatePools([big], ['self-hosted', 'LINUX-LARGE', 'linux'], 'acme/app'))).toBe('scaleSet: big');
    // Not a label it lacks, not another organisation's repository, not a pool being deleted, not a memo that names no scale set.
    expect(names(candidatePools([big], ['linux-large', 'gpu'], 'acme/app'))).toBe('no pool has the labels linux-large, gpu');
    expect(names(candidatePools([big], ['linux-large'], 'other/app'))).toBe('no pool has the labels linux-large');
    expect(names(candidatePools([scaleSetPool('gone', 'linux-large', [], { deleting: true })], ['linux-large']))).toBe('no pool has the labels linux-large');
    expect(names(candidatePools([scaleSetPool('old', undefined, ['linux-large'])], ['linux-large']))).toBe('no pool has the labels linux-large');
    // A webhook pool that takes the job is routed it, as before.
    expect(names(candidatePools([big, pool('webhook', ['linux'])], ['linux'], 'acme/app'))).toBe('pools: webhook');
    // `self-hosted` alone names no scale set.
    expect(names(candidatePools([big], ['self-hosted'], 'acme/app'))).toBe('no pool has the labels self-hosted');
  });

  it('says why nothing matched', () => {
    expect(candidatePools([pool('a', ['linux'])], ['arm64'])).toEqual({ kind: 'none', reason: 'no pool has the labels arm64' });
    expect(candidatePools([pool('a', ['arm64'], 0, false)], ['arm64'])).toEqual({
      kind: 'none',
      reason: 'the pools with the labels arm64 are disabled: a',
    });
  });

  it('names at most ten pools in a reason, however many there are', () => {
    const disabled = Array.from({ length: 150 }, (_, i) => pool(`repo-pool-${String(i).padStart(3, '0')}`, ['linux'], 0, false));
    const result = candidatePools(disabled, ['linux']);
    expect(result).toEqual({
      kind: 'none',
      reason: `the pools with the labels linux are disabled: ${disabled.slice(0, 10).map((p) => p.name).join(', ')} and 140 more`,
    });
  });

  it('only offers a job to pools whose runners its repository can use', () => {
    const repoPool = { ...pool('widgets', ['linux']), memo: { ...pool('x', []).memo!, labels: ['linux'], scope: { kind: 'repo' as const, owner: 'acme', repo: 'widgets' } } };
    const orgPool = { ...pool('acme-org', ['linux']), memo: { ...pool('x', []).memo!, labels: ['linux'], scope: { kind: 'org' as const, org: 'Acme' } } };
    const pick = (repository: string) => {
      const result = candidatePools([repoPool, orgPool], ['linux'], repository);
      return result.kind === 'none' ? result.reason : result.pools.map((p) => p.name);
    };
    expect(pick('acme/widgets')).toEqual(['widgets', 'acme-org']);
    expect(pick('ACME/gadgets')).toEqual(['acme-org']);
    expect(pick('other/widgets')).toBe('no pool with the labels linux registers runners for other/widgets: widgets, acme-org serve other repositories');
  });

  it('ignores pools without a memo yet', () => {
    expect(candidatePools([{ ...pool('a', ['linux']), memo: undefined }], ['linux']).kind).toBe('none');
  });
});

describe('freeCapacity', () => {
  const view = (overrides: Partial<PoolView>): PoolView => ({
    settings: { maxRunners: 4 } as PoolView['settings'],
    settingsVersion: 1,
    runners: [],
    queuedJobs: [],
    target: 0,
    deleting: false,
    ...overrides,
  });
  const runner = (status: PoolView['runners'][number]['status'], runnerStatus: PoolView['runners'][number]['runnerStatus'], jobId?: number) => ({
    name: `r-${Math.random()}`,
    status,
    runnerStatus,
    jobId,
    settingsVersion: 1,
    since: '2026-01-01T00:00:00.000Z',
  });

  it('counts idle runners and room to grow, less waiting jobs; deleting runners free their slot', () => {
    const v = view({
      runners: [runner('running', 'idle'), runner('running', 'active', 7), runner('deleting', 'terminated')],
      queuedJobs: [{ jobId: 1, labels: [] }],
    });
    // 4 max - 2 live + 1 idle - 1 queued
    expect(freeCapacity(v)).toBe(2);
  });

  it('gives a draining pool no capacity', () => {
    expect(freeCapacity(view({ deleting: true }))).toBe(Number.NEGATIVE_INFINITY);
  });
});

describe('freeCapacityOfGlance', () => {
  it('counts as freeCapacity does: room to grow, idle runners, less waiting jobs; leaving runners keep their place until deleting', () => {
    const glance = {
      counts: { alive: 3, idle: 1, busy: 1, starting: 1, leaving: 2 },
      statuses: { running: 3, pending_delete: 1, deleting: 1 },
      agents: { idle: 1, active: 1, pending: 1, terminated: 2 },
      queuedJobs: 1,
      desired: 2,
      minIdleRunners: 0,
      at: 0,
    };
    // 6 max - 3 live (pending_delete and deleting do not count) + 1 idle - 1 queued
    expect(freeCapacityOfGlance(glance, 6)).toBe(3);
    expect(freeCapacityOfGlance({ ...glance, statuses: {}, counts: { ...glance.counts, idle: 0 }, queuedJobs: 0 }, 4)).toBe(4);
  });
});

describe('mostFree', () => {
  it('picks the largest known capacity, the first on ties or when nothing is known', () => {
    expect(mostFree([1, 3, 3])).toBe(1);
    expect(mostFree([undefined, 0])).toBe(1);
    expect(mostFree([undefined, undefined])).toBe(0);
  });
});
