/**
 * A misspelled signal name (`forcedelete`, typed into the Web UI) is accepted by the server.
 * The workflow says so in the worker's log, with the names it takes, and goes on.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { stateQuery } from '../../workflows/messages';
import { deletePoolSignal, poolStateQuery } from '../../workflows/pool-messages';
import { startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { poolSettings, startPool } from './helpers';

// Installed before the test worker's, which then keeps this one: the worker's log is read here.
const entries: LogEntry[] = [];
if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN', (entry) => entries.push(entry)) });
const env = useTestWorker();

const warned = (signal: string) => entries.find((e) => e.message === 'ignored a signal this workflow does not take' && e.meta?.signal === signal);

describe('signals a workflow does not take', () => {
  it('are logged with the names a pool takes, and change nothing', async () => {
    const pool = await startPool(env.client, env.w.taskQueue, { settings: poolSettings({ maxRunners: 2 }) });
    const untyped = pool as unknown as { signal(name: string, ...args: unknown[]): Promise<void> };
    await untyped.signal('deletepool', {});
    const entry = await eventually(() => warned('deletepool'), 10_000, 'the warning');
    expect(String(entry.meta?.takes)).toContain('deletePool');
    expect((await pool.query(poolStateQuery)).deleting).toBe(false);
    await pool.signal(deletePoolSignal, {});
    await pool.result();
  });

  it('are logged with the names a runner takes, and change nothing', async () => {
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(uniqueName('typo')));
    await waitForStatus(handle, 'running');
    const untyped = handle as unknown as { signal(name: string, ...args: unknown[]): Promise<void> };
    await untyped.signal('forcedelete', { reason: 'typo' });
    const entry = await eventually(() => warned('forcedelete'), 10_000, 'the warning');
    expect(String(entry.meta?.takes)).toContain('forceDelete');
    expect((await handle.query(stateQuery)).status).toBe('running');
    await handle.signal('forceDelete', { reason: 'test done' });
    expect((await handle.result()).status).toBe('deleted');
  });
});
