/**
 * The dev server that `temporal-dev.sh` starts (the suite's own server is
 * started through it) keeps its SQLite database in WAL mode: measured several
 * times faster per workflow task than SQLite's rollback journal, and still
 * durable when the server process is killed.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';

describe('temporal-dev.sh', () => {
  it('runs the dev server with its SQLite database in WAL mode', () => {
    // The suite's server keeps its state beside the workflow bundle the setup wrote.
    const stateDir = dirname(inject('workflowBundlePath'));
    expect(existsSync(join(stateDir, 'temporal.db'))).toBe(true);
    // The write-ahead log sits beside the database while the server has it open.
    expect(existsSync(join(stateDir, 'temporal.db-wal'))).toBe(true);
  });
});
