/**
 * Which pools the machine pass asks to look for themselves: a pool whose glance disagrees with
 * the runners listed for it, the same way on two passes running, and again only every interval.
 */
import { describe, expect, it } from 'vitest';
import { poolDisagreement, PoolLookRequests, type Disagreement } from '../../activities/pool-look-requests';
import { nameSetDigest } from '../../domain/name-set-digest';
import type { PoolGlance } from '../../workflows/pool-messages';

function glanceOf(started: string[] | undefined, running: number): PoolGlance {
  return {
    counts: { alive: started?.length ?? 0, idle: running, busy: 0, starting: 0, leaving: 0 },
    statuses: running > 0 ? { running } : {},
    agents: {},
    queuedJobs: 0,
    desired: 0,
    minIdleRunners: 0,
    ...(started ? { started: nameSetDigest(started) } : {}),
    at: 0,
  };
}

describe('poolDisagreement', () => {
  it('finds none when the open runners are the ones the pool counts and as many run as it says', () => {
    expect(poolDisagreement({ glance: glanceOf(['a', 'b'], 2), open: ['b', 'a'], listedRunning: 2 })).toBeUndefined();
    expect(poolDisagreement({ glance: glanceOf([], 0), open: [], listedRunning: 0, listenerRuns: true })).toBeUndefined();
  });

  it('finds a runner the pool counts that is no longer open, and says so', () => {
    const found = poolDisagreement({ glance: glanceOf(['a', 'b'], 2), open: ['a'], listedRunning: 1 });
    expect(found?.why).toBe('1 open runner workflow(s) listed against 2 the pool counts');
  });

  it('finds a runner listed running that the pool counts as starting', () => {
    const found = poolDisagreement({ glance: glanceOf(['a', 'b'], 1), open: ['a', 'b'], listedRunning: 2 });
    expect(found?.why).toBe('2 runner(s) listed running against 1 the pool counts as running');
    // Fewer listed running than the pool says is a report on its way, not a lost one.
    expect(poolDisagreement({ glance: glanceOf(['a', 'b'], 2), open: ['a', 'b'], listedRunning: 1 })).toBeUndefined();
  });

  it('finds a scale set whose listener does not run', () => {
    expect(poolDisagreement({ glance: glanceOf([], 0), open: [], listedRunning: 0, listenerRuns: false })?.why).toBe('its scale set listener is not running');
  });

  it('says nothing of a pool whose glance predates the digest', () => {
    expect(poolDisagreement({ glance: glanceOf(undefined, 2), open: [], listedRunning: 0, listenerRuns: false })).toBeUndefined();
  });

  it('gives the same key for the same disagreement and another when either side moves', () => {
    const key = (open: string[], started = ['a', 'b']) => poolDisagreement({ glance: glanceOf(started, 1), open, listedRunning: 1 })?.key;
    expect(key(['a'])).toBe(key(['a']));
    expect(key(['a'])).not.toBe(key(['b']));
    expect(key(['a'])).not.toBe(key(['a'], ['a', 'c']));
  });
});

describe('PoolLookRequests', () => {
  const seen = (key: string): Disagreement => ({ key, why: `why ${key}` });

  it('asks on the second pass that sees the same disagreement, then only once per interval', () => {
    const requests = new PoolLookRequests(10_000);
    const pass = (at: number, key: string) => requests.toAsk(new Map([['p', seen(key)]]), at);
    expect(pass(0, 'k')).toEqual([]);
    expect(pass(1_000, 'k')).toEqual([{ pool: 'p', why: 'why k' }]);
    expect(pass(2_000, 'k')).toEqual([]);
    expect(pass(10_999, 'k')).toEqual([]);
    expect(pass(11_000, 'k')).toEqual([{ pool: 'p', why: 'why k' }]);
  });

  it('starts over when the disagreement changes or the pool agrees in between', () => {
    const requests = new PoolLookRequests(10_000);
    expect(requests.toAsk(new Map([['p', seen('k1')]]), 0)).toEqual([]);
    // A pool in the middle of a change: each pass sees another disagreement, none is asked.
    expect(requests.toAsk(new Map([['p', seen('k2')]]), 1_000)).toEqual([]);
    expect(requests.toAsk(new Map(), 2_000)).toEqual([]);
    expect(requests.toAsk(new Map([['p', seen('k2')]]), 3_000)).toEqual([]);
    expect(requests.toAsk(new Map([['p', seen('k2')]]), 4_000)).toEqual([{ pool: 'p', why: 'why k2' }]);
  });

  it('keeps each pool apart', () => {
    const requests = new PoolLookRequests(10_000);
    requests.toAsk(new Map([['p', seen('k')], ['q', seen('k')]]), 0);
    expect(requests.toAsk(new Map([['p', seen('k')], ['q', seen('other')]]), 1_000)).toEqual([{ pool: 'p', why: 'why k' }]);
  });
});
