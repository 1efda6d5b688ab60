/**
 * The dev server that `temporal-dev.sh` starts (the suite's own server is
 * started through it) keeps its SQLite database in WAL mode: measured several
 * times faster per workflow task than SQLite's rollback journal, and still
 * durable when the server process is killed. It keeps the server's
 * search-attribute cache on, which start-dev turns off by default. Operators
 * can hand the server dynamic config through it too.
 */
import { Client, Connection, type WorkflowStartOptions } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { devServerEnv } from '../support/global-setup';
import { sampleSum, scrape } from '../support/prometheus-text';
import { RUNNER_STATUS } from '../../workflows/search-attributes';

describe('temporal-dev.sh', () => {
  it('runs the dev server with its SQLite database in WAL mode', () => {
    // The suite's server keeps its state beside the workflow bundle the setup wrote.
    const stateDir = dirname(inject('workflowBundlePath'));
    expect(existsSync(join(stateDir, 'temporal.db'))).toBe(true);
    // The write-ahead log sits beside the database while the server has it open.
    expect(existsSync(join(stateDir, 'temporal.db-wal'))).toBe(true);
  });
});

describe('temporal-dev.sh with TEMPORAL_DYNAMIC_CONFIG', () => {
  const root = resolve(import.meta.dirname, '../..');
  const script = join(root, 'temporal-dev.sh');
  let stateDir: string;
  let env: Awaited<ReturnType<typeof devServerEnv>>;
  let connection: Connection;
  let client: Client;

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-dyncfg-'));
    // The free ports are picked before the server binds them, and the suite's other tests bind
    // ports all the time: a port taken in between ends the start, so it is tried on new ones.
    for (let attempt = 1; ; attempt++) {
      // A limit the test can see: workflow ids longer than 40 characters are refused.
      env = { ...(await devServerEnv(stateDir)), TEMPORAL_DYNAMIC_CONFIG: 'limit.maxIDLength=40' };
      try {
        execFileSync('bash', [script, 'start'], { env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 90_000 });
        break;
      } catch (err) {
        const said = String((err as { stderr?: Buffer }).stderr ?? '');
        execFileSync('bash', [script, 'stop'], { env, stdio: 'ignore', timeout: 30_000 });
        if (attempt >= 3) throw new Error(`temporal-dev.sh start failed ${attempt} times; the last said: ${said}`);
      }
    }
    connection = await Connection.connect({ address: `127.0.0.1:${env.TEMPORAL_PORT}` });
    client = new Client({ connection, namespace: 'default' });
  }, 120_000);

  afterAll(async () => {
    await connection?.close();
    execFileSync('bash', [script, 'stop'], { env, stdio: 'ignore', timeout: 30_000 });
    rmSync(stateDir, { recursive: true, force: true });
  }, 60_000);

  const start = (workflowId: string, options: Partial<WorkflowStartOptions> = {}) => client.workflow.start('anyWorkflow', { taskQueue: 'dyncfg', workflowId, ...options });

  it('hands each KEY=VALUE to the server as dynamic config', async () => {
    const refused = await start('x'.repeat(60)).then(() => undefined, (err: Error) => `${err.message}: ${String((err.cause as Error | undefined)?.message)}`);
    // The server names the limit it was given.
    expect(refused).toMatch(/WorkflowId exceeds maximum allowed length \(60\/40\)/);
    const short = await start('short-id');
    await short.terminate('test done');
  });

  it('keeps the server\'s search-attribute cache on beside the operator\'s settings', async () => {
    // With the cache off (start-dev's own default) every start and close with search attributes
    // reads the cluster's metadata and the namespace from the database; with it on, neither.
    const counters = async (): Promise<{ metadataReads: number; closesRecorded: number }> => {
      const metrics = await scrape(`http://127.0.0.1:${env.TEMPORAL_METRICS_PORT}/metrics`);
      const reads = metrics.get('persistence_requests');
      return {
        metadataReads: sampleSum(reads, { operation: 'GetCurrentClusterMetadata' }) + sampleSum(reads, { operation: 'GetNamespace' }),
        closesRecorded: sampleSum(metrics.get('visibility_persistence_requests'), { operation: 'RecordWorkflowExecutionClosed' }),
      };
    };
    const typedSearchAttributes = new TypedSearchAttributes([{ key: RUNNER_STATUS, value: 'pending_create' }]);
    // The first start fills the cache.
    await (await start('sa-warm', { typedSearchAttributes })).terminate('test done');
    await vi.waitFor(async () => expect((await counters()).closesRecorded).toBeGreaterThanOrEqual(1), { timeout: 20_000, interval: 250 });
    const before = await counters();
    const starts = 20;
    for (let i = 0; i < starts; i++) await (await start(`sa-${i}`, { typedSearchAttributes })).terminate('test done');
    // The server reports its counters every second or so: wait until it has reported every close.
    const after = await vi.waitFor(
      async () => {
        const now = await counters();
        expect(now.closesRecorded - before.closesRecorded).toBeGreaterThanOrEqual(starts);
        return now;
      },
      { timeout: 20_000, interval: 250 },
    );
    // Off, these 20 starts and closes read them about 90 times.
    expect(after.metadataReads - before.metadataReads).toBeLessThan(starts / 2);
  });
});
