import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'runnerflow-interrupt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the fixture until it is ready, then sends `signal` (if any); resolves with its exit and what its clean-ups wrote. */
function runFixture(name: string, options: { signal?: NodeJS.Signals; giveUpMs?: number; failUnawaited?: boolean }): Promise<{ code: number | null; cleaned: string[]; stderr: string }> {
  const marker = join(dir, `${name}.log`);
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'support/interruptible-bench.ts')], {
    env: { ...process.env, MARKER: marker, GIVE_UP_MS: String(options.giveUpMs ?? 0), ...(options.failUnawaited ? { FAIL_UNAWAITED: '1' } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    if (options.signal && chunk.toString().includes('ready')) child.kill(options.signal);
  });
  return new Promise((resolveExit) =>
    child.once('exit', (code) => {
      let cleaned: string[] = [];
      try {
        cleaned = readFileSync(marker, 'utf8').trim().split('\n');
      } catch {
        // No clean-up ran.
      }
      resolveExit({ code, cleaned, stderr });
    }),
  );
}

describe('a bench ended early', () => {
  it('stops what it started on Ctrl-C, newest first, skipping what it released, and exits 130', async () => {
    const run = await runFixture('sigint', { signal: 'SIGINT' });
    expect(run.code).toBe(130);
    expect(run.cleaned).toEqual(['stack', 'server']);
    expect(run.stderr).toContain('interruptible: SIGINT: stopping what the bench started');
  });

  it('does the same on SIGTERM, exiting 143', async () => {
    const run = await runFixture('sigterm', { signal: 'SIGTERM' });
    expect(run.code).toBe(143);
    expect(run.cleaned).toEqual(['stack', 'server']);
  });

  it('does the same when it gives up on its time bound, exiting 1', async () => {
    const run = await runFixture('timeout', { giveUpMs: 2_000 });
    expect(run.code).toBe(1);
    expect(run.cleaned).toEqual(['stack', 'server']);
    expect(run.stderr).toContain('interruptible: gave up after 2 s');
  });

  it('does the same when work nothing awaited fails, exiting 1', async () => {
    const run = await runFixture('unawaited', { failUnawaited: true });
    expect(run.code).toBe(1);
    expect(run.cleaned).toEqual(['stack', 'server']);
    expect(run.stderr).toContain('a restart failed');
    expect(run.stderr).toContain('interruptible: failed: stopping what the bench started');
  });
});
