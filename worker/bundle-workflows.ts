/**
 * Writes the workflow bundle to the file named by its first argument, in a directory of its own
 * that the worker made (`--stack-traces` keeps stack traces in workflow code), for a worker that
 * bundles in a process of its own (worker/workflow-bundle.ts says why). Exits 1 with the
 * bundler's error on stderr.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { bundleWorkflows } from './workflow-bundle';

const [output, ...flags] = process.argv.slice(2);
if (!output) {
  console.error('usage: bundle-workflows.ts OUTPUT [--stack-traces]');
  process.exit(2);
}
// The worker that started this process waits on it: should the worker die, so does this, taking
// the directory the worker made for the bundle with it (nobody is left to remove it).
const abandoned = () => {
  rmSync(dirname(output), { recursive: true, force: true });
  process.exit(1);
};
process.stdin.on('end', abandoned);
process.stdin.on('error', abandoned);
process.stdin.resume();
const quiet = () => undefined;
try {
  const code = await bundleWorkflows({
    stackTraces: flags.includes('--stack-traces'),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: (message: string) => console.error(message) },
  });
  writeFileSync(output, code);
  process.exit(0);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
