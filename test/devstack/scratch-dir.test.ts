import { existsSync, readdirSync, rmSync, statSync, accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { basename, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../../devstack/scratch-dir';
import { startE2EStack } from '../e2e/stack';

function writableDir(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

describe('scratchDir', () => {
  it('makes a fresh, empty directory in memory where the host has /dev/shm, else in the temporary directory', () => {
    const a = scratchDir('runnerflow-scratch-test-');
    const b = scratchDir('runnerflow-scratch-test-');
    try {
      expect(a).not.toBe(b);
      expect(readdirSync(a)).toEqual([]);
      expect(dirname(a)).toBe(writableDir('/dev/shm') ? '/dev/shm' : tmpdir());
    } finally {
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }
  });
});

describe('a dev stack with simulated machines', () => {
  it('keeps the machines in a scratch directory and removes it when it stops', async () => {
    const stack = await startE2EStack();
    const dir = stack.machinesDir!;
    try {
      expect(existsSync(dir)).toBe(true);
      expect(dirname(dir)).toBe(writableDir('/dev/shm') ? '/dev/shm' : tmpdir());
    } finally {
      await stack.stop();
    }
    expect(existsSync(dir)).toBe(false);
  });
});

describe("the test run's temporary directory", () => {
  it('is one directory for the run, which test workers and the processes they start share, and the run removes', () => {
    // The run's global set-up points TMPDIR at it and removes it at the end; a directory a test
    // makes with mkdtemp lands there, not in the system's temporary directory.
    expect(basename(tmpdir())).toMatch(/^runnerflow-test-run-/);
    const childTmp = execFileSync(process.execPath, ['-e', "process.stdout.write(require('node:os').tmpdir())"], { encoding: 'utf8' });
    expect(childTmp).toBe(tmpdir());
  });
});
