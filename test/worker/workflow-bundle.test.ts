/**
 * A worker that bundles its workflows from source does it in a short-lived process of its own:
 * webpack's memory then leaves with that process instead of staying in the worker's for good.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleWorkflowsApart } from '../../worker/workflow-bundle';
import { startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, startTestWorker, uniqueName, useClient, type TestWorker } from '../support/temporal';

const bundleDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith('runnerflow-bundle-'));

/** A temporary directory of this file's own, so that other test files bundling meanwhile are not counted. */
const ownTmp = mkdtempSync(join(tmpdir(), 'bundle-test-'));
const sharedTmp = process.env.TMPDIR;
process.env.TMPDIR = ownTmp;
afterAll(() => {
  if (sharedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = sharedTmp;
});

const temporal = useClient();

/** A runner made and force-deleted on the worker: its workflows run from the bundle it loaded. */
async function aRunnerRunsAndGoes(worker: TestWorker, tag: string): Promise<void> {
  const handle = await startInstance(temporal.client, worker.taskQueue, instanceInput(uniqueName(tag)));
  await waitForStatus(handle, 'running');
  await handle.signal('forceDelete', { reason: 'test done' });
  expect((await handle.result()).status).toBe('deleted');
}

describe('a worker bundling its workflows from source', () => {
  it('bundles them in a process of its own, runs runners on the bundle, and keeps no file of it', async () => {
    expect(tmpdir()).toBe(ownTmp);
    const before = bundleDirs();
    const said: string[] = [];
    const worker = await startTestWorker({ workflowStackTraces: false, log: (message) => said.push(message) });
    try {
      expect(said).toEqual([expect.stringMatching(/^workflows bundled from source in a process of their own in \d+ ms$/)]);
      expect(bundleDirs()).toEqual(before);
      await aRunnerRunsAndGoes(worker, 'bundled');
    } finally {
      await worker.stop();
    }
  }, 120_000);

  it('ends its bundling process when the worker dies at start, and leaves nothing behind', async () => {
    const before = bundleDirs();
    const worker = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./support/bundling-worker.ts', import.meta.url))], { env: { ...process.env, TMPDIR: ownTmp }, stdio: 'ignore' });
    const started = await eventually(() => bundleDirs().find((dir) => !before.includes(dir)), 30_000, 'the bundling process to start');
    const bundler = () => execFileSync('ps', ['-eo', 'args']).toString().split('\n').filter((line) => line.includes(started));
    expect(bundler()).toHaveLength(1);
    worker.kill('SIGKILL');
    await eventually(() => bundler().length === 0 && !bundleDirs().includes(started), 15_000, 'the bundling process to end and remove its directory');
    expect(bundleDirs()).toEqual(before);
  }, 60_000);

  it('bundles in its own process when a process of their own cannot be had, and says why', async () => {
    const fakeDir = mkdtempSync(join(ownTmp, 'fake-'));
    // No directory can be made for the bundle: the bundling process cannot be given one.
    process.env.TMPDIR = join(ownTmp, 'not-there');
    const said: string[] = [];
    try {
      const worker = await startTestWorker({ fakeDir, workflowStackTraces: false, log: (message) => said.push(message) });
      try {
        await aRunnerRunsAndGoes(worker, 'fallback');
      } finally {
        await worker.stop();
      }
    } finally {
      process.env.TMPDIR = ownTmp;
    }
    expect(said).toEqual([expect.stringMatching(/^ENOENT: .*; bundling in the worker's own process instead$/)]);
  }, 120_000);

  it('says why when the bundling process fails, and leaves nothing behind', async () => {
    const before = bundleDirs();
    await expect(bundleWorkflowsApart({ timeoutMs: 1 })).rejects.toThrow(/^bundling the workflows in a process of their own failed/);
    expect(bundleDirs()).toEqual(before);
  });
});
