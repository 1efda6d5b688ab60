/**
 * Runs the GitHub simulator on its own, for benchmarks and manual testing:
 *
 *   tsx github/simulator/main.ts [--port 3000] [--webhook-url URL] [--job-duration-ms 1000]
 *
 * The webhook secret comes from $GITHUB_SIMULATOR_WEBHOOK_SECRET (never a flag,
 * so it stays out of process listings).
 */
import { parseArgs } from 'node:util';
import { startGitHubSimulator } from './server';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'webhook-url': { type: 'string' },
    'job-duration-ms': { type: 'string' },
  },
});

const sim = await startGitHubSimulator({
  port: Number(values.port),
  webhookUrl: values['webhook-url'],
  webhookSecret: process.env.GITHUB_SIMULATOR_WEBHOOK_SECRET,
  jobDurationMs: values['job-duration-ms'] ? Number(values['job-duration-ms']) : undefined,
});
console.log(`GitHub simulator: API ${sim.url}  control ${sim.controlUrl}`);

const shutdown = (): void => {
  void sim.close().finally(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
