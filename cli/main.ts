import { runCli } from './run';

// Ctrl-C asks the running command to stop: a request in flight is cancelled and the exit code is 130.
const interrupt = new AbortController();
/** How long a command may take to wind down after Ctrl-C before the process exits regardless. */
const INTERRUPT_GRACE_MS = 2_000;
process.once('SIGINT', () => {
  interrupt.abort();
  // Requests and waits end on the abort; anything else still holding the process must not keep Ctrl-C from working.
  setTimeout(() => process.exit(130), INTERRUPT_GRACE_MS).unref();
});

process.exitCode = await runCli(process.argv.slice(2), {
  signal: interrupt.signal,
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
});
