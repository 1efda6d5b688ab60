/**
 * A runner workflow terminated by hand never tells its pool. The pool's own look finds it, but
 * only every `poolAuditInterval`, a backstop of an hour while the liveness passes run. The
 * machine pass finds it sooner: the pool's glance counts a runner the listing no longer shows,
 * and on the second pass that sees it so the pool is asked to look (`auditPool`).
 */
import { describe, expect, it } from 'vitest';
import { PoolDirectory } from '../../api/pool-directory';
import { livenessFindings } from '../../observability/metrics';
import { runnerWorkflowId } from '../../workflows/messages';
import { auditPoolSignal, countedRunnersQuery, deletePoolSignal, poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { poolMemoOf } from '../../workflows/pool-memo';
import { runnerPool } from '../../workflows/runner-pool';
import { autoRegister, idleRunners, poolSettings } from '../pool/helpers';
import { eventually } from '../support/temporal';
import { addProvider, LIVENESS_TIMINGS, runLiveness, useLivenessRig, waitUntilListedRunning } from './helpers';

const rig = useLivenessRig();
const HOUR_MS = 60 * 60_000;

/** A pool as the API starts one (its memo names its provider), looking by itself only every hour. */
async function poolWithIdleRunners(provider: string, count: number, timings: Record<string, number> = {}) {
  const settings = poolSettings({ provider, ephemeral: false, minIdleRunners: count, maxRunners: count });
  const pool = await rig.client.workflow.start(runnerPool, {
    taskQueue: rig.worker.taskQueue,
    workflowId: poolWorkflowId(settings.name),
    args: [{ settings, timings: { ...LIVENESS_TIMINGS, poolGlanceIntervalMs: 0, poolAuditIntervalMs: HOUR_MS, ...timings } }],
    memo: { ...poolMemoOf(settings) },
  });
  const agents = autoRegister(rig.client, pool);
  const directory = new PoolDirectory(rig.client, 0);
  const names = await eventually(async () => {
    const glance = (await directory.fetch()).find((entry) => entry.name === settings.name)?.memo?.glance;
    const idle = idleRunners(await pool.query(poolStateQuery));
    return glance?.started?.count === count && idle.length === count ? idle : undefined;
  }, 20_000, `visibility to list a glance of ${count} runners started`);
  await waitUntilListedRunning(rig, names);
  return { settings, pool, agents, names };
}

/** How many open runner workflows visibility lists by this name. */
async function openRunners(name: string): Promise<number> {
  let open = 0;
  for await (const info of rig.client.workflow.list({ query: `WorkflowType = 'runnerInstance' AND ExecutionStatus = 'Running' AND RunnerName = '${name}'` })) if (info) open += 1;
  return open;
}

/** The pool's looks so far: each is one `findEndedRunners` activity in its history. */
async function looksOf(poolId: string): Promise<number> {
  const history = await rig.client.workflow.getHandle(poolId).fetchHistory();
  return (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'findEndedRunners').length;
}

describe('a pool the machine pass asks to look', () => {
  it('drops a runner terminated by hand within two passes, and a settled pool is asked nothing', async () => {
    const provider = addProvider(rig);
    const { settings, pool, agents, names } = await poolWithIdleRunners(provider.name, 2);
    try {
      const settled = await runLiveness(rig, { provider: provider.name, check: 'machines' });
      expect(settled).toMatchObject({ instances: 2, failed: [] });
      expect(settled.poolsAskedToLook).toBeUndefined();

      const [ended, kept] = names as [string, string];
      await rig.client.workflow.getHandle(runnerWorkflowId(ended)).terminate('operator terminated it');
      await eventually(async () => ((await openRunners(ended)) === 0 ? true : undefined), 20_000, 'visibility to list the terminated runner closed');

      // The first pass that sees the pool disagree waits: a pool in the middle of a change would too.
      const first = await runLiveness(rig, { provider: provider.name, check: 'machines' });
      expect(first.poolsAskedToLook).toBeUndefined();
      const second = await runLiveness(rig, { provider: provider.name, check: 'machines' });
      expect(second.poolsAskedToLook).toEqual([{ pool: settings.name, why: '1 open runner workflow(s) listed against 2 the pool counts' }]);
      // Counted where operators alert: a count that keeps rising means runners end without telling their pools.
      const counted = (await livenessFindings.get()).values.find((v) => v.labels.provider === provider.name && v.labels.finding === 'pool_asked_to_look');
      expect(counted?.value).toBe(1);

      // The pool looks for itself, drops the runner and makes another in its place.
      await eventually(async () => ((await pool.query(countedRunnersQuery)).includes(ended) ? undefined : true), 20_000, 'the pool to drop the terminated runner');
      const now = await eventually(async () => {
        const idle = idleRunners(await pool.query(poolStateQuery));
        return idle.length === 2 ? idle : undefined;
      }, 20_000, 'the pool back at two idle runners');
      expect(now).toContain(kept);
      expect(now).not.toContain(ended);
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });

  it('looks at most once per leaveReaskInterval however often it is asked', async () => {
    const provider = addProvider(rig);
    const spacingMs = 2_000;
    const { pool, agents } = await poolWithIdleRunners(provider.name, 1, { leaveReaskIntervalMs: spacingMs });
    try {
      const before = await looksOf(pool.workflowId);
      const startedAt = Date.now();
      for (let i = 0; i < 10; i += 1) {
        await pool.signal(auditPoolSignal, { reason: `ask ${i}` });
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      // Past the last ask by more than the spacing: a look it still owes has been made.
      await new Promise((resolve) => setTimeout(resolve, spacingMs + 1_000));
      const elapsed = Date.now() - startedAt;
      const looks = (await looksOf(pool.workflowId)) - before;
      // Ten asks over three seconds: a look when first asked, and one per spacing after it.
      expect(looks).toBeGreaterThanOrEqual(2);
      expect(looks).toBeLessThanOrEqual(Math.ceil(elapsed / spacingMs) + 1);
      expect(looks).toBeLessThan(10);
    } finally {
      agents.stop();
      await pool.signal(deletePoolSignal, {});
    }
    await pool.result();
  });
});
