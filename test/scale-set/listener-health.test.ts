/**
 * What an operator sees of a scale-set pool's listener (`runnerflow_scale_set_listener`), a
 * listener that no longer runs (terminated by hand, say), started again at the pool's next look
 * without waiting for the pool to continue as new, a job whose offer was lost on a quiet scale
 * set, and the scale set of a deleted pool whose listener another session kept out.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { poolWorkflowId } from '../../workflows/pool-messages';
import { scaleSetListenerId, type ScaleSetView } from '../../workflows/scale-set-messages';
import { labelNames, sampleSum, scrape } from '../support/prometheus-text';
import type { HistoryEvent } from '../support/replay';
import { eventually } from '../support/temporal';
import { listenerState, listeningPool as listeningPoolOf, scaleSetPool, useScaleSetStack } from './support/stack';

/** Long against the API's 5 s cache of what /metrics shows, so a listener gone just after a look is seen gone. */
const AUDIT_MS = 12_000;
/** How long a deleted pool's listener waits for a session that keeps it out to lapse. */
const HELD_SESSION_WAIT_MS = 12_000;
/** How often a listener with nothing to hear looks for jobs waiting at GitHub. */
const WAITING_JOBS_INTERVAL_MS = 2_000;
const stack = useScaleSetStack(500, { poolAuditInterval: AUDIT_MS, scaleSetHeldSessionWait: HELD_SESSION_WAIT_MS, scaleSetWaitingJobsInterval: WAITING_JOBS_INTERVAL_MS });

async function poolEvents(pool: string, match: (e: HistoryEvent) => boolean): Promise<number> {
  const history = await stack.client.workflow.getHandle(poolWorkflowId(pool)).fetchHistory();
  return (history.events ?? []).filter(match).length;
}

/** The pool's looks for its listener so far: each one refused while the listener runs. */
const looksRefused = (pool: string) => poolEvents(pool, (e) => !!e.startChildWorkflowExecutionFailedEventAttributes);

/** The listener's reports of its scale set in the pool's history. */
const demandReports = (pool: string) => poolEvents(pool, (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'scaleSetDemand');

/** A new scale-set pool keeping no runners, once its listener holds a session. */
const listeningPool = () => listeningPoolOf(stack, { maxRunners: 1, scaleSet: { minRunners: 0 } });

/** The listener's successor, once it runs in place of the run `ended` and reaches `status`. */
function successor(pool: string, ended: string, status: ScaleSetView['status'], timeoutMs: number): Promise<ScaleSetView> {
  const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool));
  return eventually(async () => {
    const d = await handle.describe().catch(() => undefined);
    if (d?.status.name !== 'RUNNING' || d.runId === ended) return undefined;
    const s = await listenerState(stack.client, pool);
    return s?.status === status ? s : undefined;
  }, timeoutMs, `the listener started again, ${status}`);
}

const atGitHub = (scaleSetId: number): boolean => stack.sim.scaleSets().some((set) => set.id === scaleSetId);

/** `runnerflow_scale_sets_left_total` of the pool. */
async function scaleSetsLeftCounted(pool: string): Promise<number> {
  const family = (await scrape(`${stack.api.url}/metrics`)).get('runnerflow_scale_sets_left_total');
  return family ? sampleSum(family, { pool }) : 0;
}

async function listenerStatuses(pool: string): Promise<string[]> {
  const family = (await scrape(`${stack.api.url}/metrics`)).get('runnerflow_scale_set_listener');
  return (family?.samples ?? []).filter((s) => s.labels.pool === pool && s.value === 1).map((s) => s.labels.status!);
}

describe("a scale-set pool's listener", () => {
  it('is shown `conflict` while it cannot get a session, then `listening` once it holds one, and is not started twice by the looks', async () => {
    // Another listener holds the scale set, as far as this one can tell, until the fault is cleared.
    stack.sim.setFault({ kind: 'session-conflict', times: 10_000 });
    const pool = scaleSetPool({ maxRunners: 1 });
    expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    await eventually(async () => ((await listenerStatuses(pool.name)).join() === 'conflict' ? true : undefined), 30_000, 'the listener shown in conflict');
    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const inConflict = (await handle.describe()).runId;
    // A look while it waits on the conflict leaves it be.
    await eventually(async () => ((await looksRefused(pool.name)) > 0 ? true : undefined), AUDIT_MS * 3, 'a look for the listener');

    stack.sim.clearFaults();
    await eventually(async () => ((await listenerStatuses(pool.name)).join() === 'listening' ? true : undefined), 30_000, 'the listener shown listening');
    const family = (await scrape(`${stack.api.url}/metrics`)).get('runnerflow_scale_set_listener')!;
    expect([...labelNames(family)].sort()).toEqual(['pool', 'status']);
    expect(sampleSum(family, { pool: pool.name })).toBe(1);
    expect((await handle.describe()).runId).toBe(inConflict);
    expect((await listenerState(stack.client, pool.name))?.sessionsOpened).toBe(1);

    await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`);
    await handle.result();
  });

  it("is shown `absent` once it no longer runs, is started again at the pool's next look, with a new session, and the pool's jobs run again", async () => {
    // No runners kept: the pool has no runner to look for, only its listener.
    const { pool, first } = await listeningPool();
    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const firstRun = (await handle.describe()).runId;
    // Just after a look, so that the next one is a whole interval away.
    const looks = await looksRefused(pool.name);
    await eventually(async () => ((await looksRefused(pool.name)) > looks ? true : undefined), AUDIT_MS * 3, 'a look for the listener');
    // Ended without closing its session, which GitHub holds until it lapses.
    await handle.terminate('test: listener gone');

    await eventually(async () => ((await listenerStatuses(pool.name)).join() === 'absent' ? true : undefined), 20_000, 'the metrics showing no listener');
    const again = await successor(pool.name, firstRun, 'listening', 30_000);
    expect(again.sessionId).not.toBe(first.sessionId);
    expect(again.scaleSetId).toBe(first.scaleSetId);

    const job = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 60_000, 'a job run after the listener came back');
    await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`);
    await handle.result();
  });

  it("started again but kept from a session by its predecessor's, still deletes the pool's scale set with the pool", async () => {
    const { pool, first } = await listeningPool();
    // The listener's report of its session reaches the pool after the listener says it listens.
    await eventually(async () => ((await demandReports(pool.name)) > 0 ? true : undefined), 20_000, 'the pool told of the scale set');
    const handle = stack.client.workflow.getHandle(scaleSetListenerId(pool.name));
    const firstRun = (await handle.describe()).runId;
    // GitHub keeps answering 409: the terminated listener's session has not lapsed yet.
    stack.sim.setFault({ kind: 'session-conflict', times: 10_000 });
    try {
      await handle.terminate('test: listener gone');
      const waiting = await successor(pool.name, firstRun, 'conflict', AUDIT_MS * 3);
      expect(waiting.sessionsOpened).toBe(0);

      expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
      const stopped = await handle.result();
      expect(stopped.status).toBe('stopped');
      expect(stopped.sessionsOpened).toBe(0);
      // The pool's listener held a session on it, so it is the pool's to delete.
      expect(stack.sim.scaleSets().some((set) => set.id === first.scaleSetId)).toBe(false);
    } finally {
      stack.sim.clearFaults();
    }
  });

  it('on a quiet scale set, acquires a job whose offer was lost, with no later message or new session to tell of it', async () => {
    const { pool, first } = await listeningPool();
    stack.sim.setFault({ kind: 'lose-job-offer', times: 1 });
    const lost = stack.sim.queueJob({ repository: 'acme/app', labels: [pool.name] });
    await eventually(() => stack.sim.jobs().find((j) => j.id === lost.id && j.status === 'completed'), 30_000, 'the job whose offer was lost to run');
    const s = await listenerState(stack.client, pool.name);
    expect(s?.waitingJobsAcquired).toBe(1);
    expect(s?.sessionsOpened).toBe(first.sessionsOpened);
    expect(s?.sessionId).toBe(first.sessionId);
    await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`);
    await stack.client.workflow.getHandle(scaleSetListenerId(pool.name)).result();
  });

  describe('kept from a session from the start, so that its pool never heard of its scale set', () => {
    afterEach(() => stack.sim.clearFaults());

    // As a listener terminated while GitHub opened its session leaves its successor: a scale set
    // the pool was never told of, and a session that lapses only once nobody polls it.
    async function deletedWhileHeldOut(): Promise<{ pool: ReturnType<typeof scaleSetPool>; scaleSetId: number }> {
      stack.sim.setFault({ kind: 'session-conflict', times: 10_000 });
      const pool = scaleSetPool({ maxRunners: 1, scaleSet: { minRunners: 0 } });
      expect((await apiRequest(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
      const held = await eventually(async () => {
        const s = await listenerState(stack.client, pool.name);
        return s?.status === 'conflict' && s.scaleSetId !== undefined ? s : undefined;
      }, 30_000, 'the listener kept out');
      expect(held.sessionsOpened).toBe(0);
      expect(await demandReports(pool.name)).toBe(0);
      expect((await apiRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`)).status).toBeLessThan(300);
      // Its first ask of the wait is refused too, and it says what it waits for.
      await eventually(async () => {
        const s = await listenerState(stack.client, pool.name);
        return s?.status === 'stopping' && /waiting for another session .* to lapse/.test(s.lastError ?? '') ? s : undefined;
      }, 20_000, 'the listener stopping, waiting for the session to lapse');
      return { pool, scaleSetId: held.scaleSetId! };
    }

    it('deletes the scale set with its pool once that session lapses', async () => {
      const { pool, scaleSetId } = await deletedWhileHeldOut();
      expect(atGitHub(scaleSetId)).toBe(true);
      // Nobody polls the session any more: GitHub lets it lapse and grants a new one.
      stack.sim.clearFaults();
      const stopped = await stack.client.workflow.getHandle(scaleSetListenerId(pool.name)).result();
      expect(stopped.status).toBe('stopped');
      expect(stopped.sessionsOpened).toBe(1);
      expect(atGitHub(scaleSetId)).toBe(false);
      expect(await scaleSetsLeftCounted(pool.name)).toBe(0);
    });

    it('asks again through a GitHub outage during the wait, and deletes the scale set once a session is had', async () => {
      const { pool, scaleSetId } = await deletedWhileHeldOut();
      const asked = () => stack.sim.stats().actionsCalls['create-session'] ?? 0;
      const before = asked();
      // The session lapses, but GitHub fails a whole round of the listener's three tries. Only one
      // round: a loaded machine must still find the wait long enough for the ask after it.
      stack.sim.clearFaults();
      stack.sim.setFault({ kind: 'server-error', status: 503, operation: 'create-session', times: 3 });
      const stopped = await stack.client.workflow.getHandle(scaleSetListenerId(pool.name)).result();
      expect(stopped.status).toBe('stopped');
      expect(asked() - before).toBeGreaterThanOrEqual(4);
      expect(atGitHub(scaleSetId)).toBe(false);
      expect(await scaleSetsLeftCounted(pool.name)).toBe(0);
    });

    it('leaves a scale set whose session is still held when the wait ends, and says so', async () => {
      const { pool, scaleSetId } = await deletedWhileHeldOut();
      const stopped = await stack.client.workflow.getHandle(scaleSetListenerId(pool.name)).result();
      expect(stopped.status).toBe('stopped');
      expect(stopped.sessionsOpened).toBe(0);
      expect(stopped.lastError).toMatch(new RegExp(`scale set ${scaleSetId} left at GitHub: another session still holds it`));
      // Another installation's listener may be polling it: not this pool's to delete.
      expect(atGitHub(scaleSetId)).toBe(true);
      // Counted, for an alert: nothing else would show a scale set its deleted pool left.
      expect(await scaleSetsLeftCounted(pool.name)).toBe(1);
    });
  });
});
