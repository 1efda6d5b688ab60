/**
 * The machine pass reads visibility first and asks each pool what it counts afterwards. A
 * runner that leaves in between is listed as running by the one and written off by the
 * other: its last report reaches the pool from within the workflow task that ends it, while
 * that task still holds the workflow open. Asked to leave again and reported as a runner its
 * pool lost track of, it would be a false alarm on every busy pass.
 */
import { describe, expect, it } from 'vitest';
import { runnerWorkflowId } from '../../workflows/messages';
import type { runnerInstance } from '../../workflows/runner-instance';
import { countedRunnersQuery, deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { autoRegister, idleRunners, poolSettings, startPool } from '../pool/helpers';
import { eventually } from '../support/temporal';
import { addProvider, LIVENESS_TIMINGS, runLiveness, useLivenessRig, waitUntilListedRunning } from './helpers';

// The pass waits for a runner's open workflow task before it decides; here, longer than the
// forced attempt below holds it.
const rig = useLivenessRig({ poolQueryTimeoutMs: 15_000 });

describe('a runner leaving while the machine pass looks', () => {
  it('is neither asked to leave again nor reported as one its pool does not count', async () => {
    const provider = addProvider(rig);
    const settings = poolSettings({ provider: provider.name, ephemeral: false, minIdleRunners: 1, maxRunners: 2 });
    // A forced delete tells its pool "deleted" at once, and its workflow task stays open for the
    // forced attempt: a window of seconds where the pool has written the runner off and the
    // runner is still open, the moment that is otherwise a few milliseconds long.
    const timings = { ...LIVENESS_TIMINGS, forceDeleteAttemptTimeoutMs: 4_000 };
    const pool = await startPool(rig.client, rig.worker.taskQueue, { settings, timings });
    const agents = autoRegister(rig.client, pool);
    const [leaving] = await eventually(async () => {
      const idle = idleRunners(await pool.query(poolStateQuery));
      return idle.length === 1 ? idle : undefined;
    }, 20_000, 'one idle runner');
    await waitUntilListedRunning(rig, [leaving!]);
    provider.fake.setFault('delete', { hang: true });
    const leavingHandle = rig.client.workflow.getHandle<typeof runnerInstance>(runnerWorkflowId(leaving!));

    let listed: string[] = [];
    let openWhenWrittenOff: string | undefined;
    rig.afterNextListing = async (names) => {
      listed = names;
      await leavingHandle.signal('forceDelete', { reason: 'operator forced it' });
      await eventually(async () => ((await pool.query(countedRunnersQuery)).includes(leaving!) ? undefined : true), 20_000, 'its pool to write it off');
      openWhenWrittenOff = (await leavingHandle.describe()).status.name;
    };
    const report = await runLiveness(rig, { provider: provider.name, check: 'machines' });

    expect(listed).toEqual([leaving]);
    // The window was there: written off by its pool, the runner's workflow still open.
    expect(openWhenWrittenOff).toBe('RUNNING');
    expect(report).toMatchObject({ instances: 1, signalled: [], orphaned: [], uncounted: [], failed: [] });
    const final = await leavingHandle.result();
    expect(final.status).toBe('deleted');
    expect(final.transitions.map((t) => t.reason ?? '').filter((r) => r.includes('does not count'))).toEqual([]);
    // No delete signal from the pass reached it either.
    const history = await leavingHandle.fetchHistory();
    const signals = (history.events ?? []).map((e) => e.workflowExecutionSignaledEventAttributes?.signalName).filter((n) => n !== undefined);
    expect(signals).not.toContain('delete');

    // The forced attempt handed the machine to its clean-up, which finishes once the provider answers.
    provider.fake.clearFaults('delete');
    await eventually(() => (provider.fake.instance(leaving!) ? undefined : true), 30_000, 'the clean-up to remove the machine');
    agents.stop();
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });
});
