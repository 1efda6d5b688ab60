import { describe, expect, it } from 'vitest';
import { RunnerToolsCache } from '../../activities/runner-tools-cache';

const scope = { kind: 'org' as const, org: 'acme' };
const tool = { os: 'linux', architecture: 'x64', download_url: 'https://example.invalid/r.tgz', filename: 'r.tgz' };

describe('RunnerToolsCache', () => {
  it('shares one request among concurrent creates of a scope', async () => {
    const cache = new RunnerToolsCache(60_000);
    let calls = 0;
    const fetch = async () => {
      calls += 1;
      await new Promise((r) => setTimeout(r, 20));
      return [tool];
    };
    const results = await Promise.all(Array.from({ length: 5 }, () => cache.get('default', scope, fetch)));
    expect(calls).toBe(1);
    expect(results.every((r) => r[0] === tool)).toBe(true);
    await cache.get('default', { kind: 'org', org: 'other' }, fetch);
    expect(calls).toBe(2);
  });

  it('forgets a failed request and refetches after the TTL', async () => {
    const cache = new RunnerToolsCache(0);
    await expect(cache.get('default', scope, () => Promise.reject(new Error('GitHub down')))).rejects.toThrow('GitHub down');
    let calls = 0;
    const fetch = async () => (calls += 1, [tool]);
    await cache.get('default', scope, fetch);
    await new Promise((r) => setTimeout(r, 5));
    await cache.get('default', scope, fetch);
    expect(calls).toBe(2);
  });
});
