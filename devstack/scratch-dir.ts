import { accessSync, constants, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Linux's memory-backed filesystem, present on almost every host. */
const MEMORY_FS = '/dev/shm';

function memoryFsUsable(): boolean {
  try {
    if (!statSync(MEMORY_FS).isDirectory()) return false;
    accessSync(MEMORY_FS, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A fresh directory for the devstack's stand-ins (the simulated machines'
 * bookkeeping, a stack's config files), in memory where the host has a
 * memory-backed filesystem. The simulated machines stand in for a cloud, whose
 * bookkeeping costs the manager's host nothing; on a disk, each of their
 * cross-process locks and atomic writes is a metadata update the disk's
 * journal must take (measured: 83 µs against 7 µs for a lock's mkdir and rmdir,
 * 146 µs against 20 µs for a write, rename and read), and at tens of jobs a
 * second that showed up as orchestration time that is not runnerflow's. The
 * files still outlive the processes that wrote them, which the crash tests
 * need. Whoever makes one removes it (the stacks do when they stop): in
 * memory, a directory left behind holds the host's memory until it restarts,
 * which is why the test workers' own fake-provider directories, kept for
 * restarts within a test, stay on disk, under the test run's temporary
 * directory, which the run removes at its end.
 */
export function scratchDir(prefix: string): string {
  return mkdtempSync(join(memoryFsUsable() ? MEMORY_FS : tmpdir(), prefix));
}
