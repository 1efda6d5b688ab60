import { existsSync, readdirSync, rmSync, statSync, accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
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
