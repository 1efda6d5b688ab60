/**
 * Job routing reads the pools from visibility, which lags a pool's start. A
 * pool this process just created is listed anyway, so a job queued for it at
 * once is routed to it instead of being recorded as unmatched.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { PoolDirectory, type PoolEntry } from '../../api/pool-directory';

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
});
