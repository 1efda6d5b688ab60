/**
 * The dev server that `temporal-dev.sh` starts (the suite's own server is
 * started through it) keeps its SQLite database in WAL mode: measured several
 * times faster per workflow task than SQLite's rollback journal, and still
 * durable when the server process is killed. Operators can hand the server
 * dynamic config through it too.
 */
import { Client, Connection } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { devServerEnv } from '../support/global-setup';

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
  it('hands each KEY=VALUE to the server as dynamic config', async () => {
    const root = resolve(import.meta.dirname, '../..');
    const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-dyncfg-'));
    // A limit the test can see: workflow ids longer than 40 characters are refused.
    const env = { ...(await devServerEnv(stateDir)), TEMPORAL_DYNAMIC_CONFIG: 'limit.maxIDLength=40' };
    const port = env.TEMPORAL_PORT;
    const script = join(root, 'temporal-dev.sh');
    execFileSync('bash', [script, 'start'], { env, stdio: 'ignore', timeout: 90_000 });
    const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
    try {
      const client = new Client({ connection, namespace: 'default' });
      const start = (workflowId: string) => client.workflow.start('anyWorkflow', { taskQueue: 'dyncfg', workflowId });
      const refused = await start('x'.repeat(60)).then(() => undefined, (err: Error) => `${err.message}: ${String((err.cause as Error | undefined)?.message)}`);
      // The server names the limit it was given.
      expect(refused).toMatch(/WorkflowId exceeds maximum allowed length \(60\/40\)/);
      const short = await start('short-id');
      await short.terminate('test done');
    } finally {
      await connection.close();
      execFileSync('bash', [script, 'stop'], { env, stdio: 'ignore', timeout: 30_000 });
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);
});
