/**
 * Stand-in runners for the local process provider: they write what they were
 * given to files in their working directory, so tests can check it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Records argv and env, forks a grandchild that ignores SIGTERM, then sleeps. */
const LONG_RUNNER = String.raw`
const fs = require('node:fs');
const { spawn } = require('node:child_process');
fs.writeFileSync('argv.json', JSON.stringify(process.argv.slice(2)));
fs.writeFileSync('env.json', JSON.stringify(process.env));
const grandchild = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); require('node:fs').writeFileSync('grandchild.ready', ''); setInterval(() => {}, 1000)"], { stdio: 'ignore' });
fs.writeFileSync('grandchild.pid', String(grandchild.pid));
console.log('runner up');
setInterval(() => {}, 1000);
`;

/** Exits at once with the status given as its only argument. */
const SHORT_RUNNER = String.raw`
console.error('runner giving up');
process.exit(Number(process.argv[2] ?? 0));
`;

export function writeRunnerScripts(dir: string): { long: string; short: string } {
  const long = join(dir, 'long-runner.cjs');
  const short = join(dir, 'short-runner.cjs');
  writeFileSync(long, LONG_RUNNER);
  writeFileSync(short, SHORT_RUNNER);
  return { long, short };
}
