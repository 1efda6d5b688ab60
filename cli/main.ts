import { runCli } from './run';

// Ctrl-C asks the running command to stop; `runner watch` ends cleanly with exit code 130.
const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());

process.exitCode = await runCli(process.argv.slice(2), {
  signal: interrupt.signal,
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
});
