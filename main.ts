/**
 * `npm start`: a local Temporal dev server (started if it is not running), a
 * worker and the HTTP API in one process. Without GitHub credentials in the
 * config it runs a demo against the built-in GitHub simulator, so a fresh
 * checkout shows the whole loop: job queued → runner created → job run → runner gone.
 */
import { Client } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import { HttpError } from './api/http/errors';
import { startPool } from './api/pool-settings';
import { ListenError } from './api/node-server';
import { serveApi } from './api/serve';
import { ConfigError, configWarnings, loadConfig, resolveSecret, type LoadedConfig } from './config/load';
import { DEFAULT_WEB_UI_URL } from './config/schema';
import { poolSettingsSchema, type PoolSettings } from './domain/pool';
import { parseDuration } from './domain/duration';
import { demoPoolMemo, findDemoPools, removeDemoPools } from './devstack/demo-pools';
import { within } from './domain/concurrency';
import { startDevStack } from './devstack/stack';
import { demoApiLogger, startDemoStory, storyEmitter } from './devstack/demo-story';
import { DevServerError, devServer, temporalAnswers } from './devstack/temporal-server';
import { createGitHubRegistry } from './github/registry';
import { startWorker } from './worker/start';
import { createLogger, logFormat } from './observability/logger';
import { installTemporalRuntime, sdkRuntimeOptionsFromEnv } from './observability/temporal-runtime';
import { connectTemporal } from './api/temporal/connection';

const say = (message: string) => console.log(`runnerflow: ${message}`);
const rootLogger = createLogger();

/** Starts the project's dev server when the configured address is a local one that is not answering. */
async function ensureTemporal(address: string): Promise<void> {
  if (await temporalAnswers(address)) return;
  const [host, port] = address.split(':');
  if (!['127.0.0.1', 'localhost'].includes(host ?? '')) {
    throw new ConfigError(`Temporal at ${address} does not answer (TEMPORAL_ADDRESS / temporal.address)`);
  }
  say(`no Temporal server on ${address}: starting the local dev server`);
  try {
    devServer('start', port ?? '7233');
  } catch (err) {
    if (!(err instanceof DevServerError)) throw err;
    throw new DevServerError(`the local Temporal dev server did not start: ${err.message} (or start Temporal yourself and set TEMPORAL_ADDRESS)`);
  }
}

/** Every wait of the clean-up after Ctrl-C fits in this (RUNNERFLOW_SHUTDOWN_TIMEOUT); then the process exits anyway. */
let SHUTDOWN_TIMEOUT_MS = 8_000;

function shutdownTimeout(value: string | undefined): number {
  try {
    return parseDuration(value ?? '8s');
  } catch (err) {
    throw new ConfigError(`RUNNERFLOW_SHUTDOWN_TIMEOUT: ${(err as Error).message}`);
  }
}
/** A repeat of the signal this soon is the same Ctrl-C relayed by a parent, not a second one. */
const SIGNAL_ECHO_MS = 500;

async function seedPools(client: Client, loaded: LoadedConfig, pools: PoolSettings[], extraMemo: Record<string, unknown> = {}): Promise<void> {
  for (const settings of pools) {
    try {
      await startPool(client, loaded.config.temporal.taskQueue, loaded.config, settings, extraMemo);
      say(`pool "${settings.name}" created`);
    } catch (err) {
      if (err instanceof HttpError && err.status === 409) say(`pool "${settings.name}" already exists; left as it is`);
      else throw err;
    }
  }
}

async function runDemo(loaded: LoadedConfig): Promise<() => Promise<void>> {
  const { config } = loaded;
  say('no GitHub credentials configured: running the demo against the built-in GitHub simulator');
  const stack = await startDevStack({
    temporalAddress: config.temporal.address,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    machines: 'configured',
    listen: config.api.listen,
    config: { providers: config.providers, timings: { createInitialInterval: '1s' }, controllerId: config.controllerId },
    simulator: { jobDurationMs: 5_000, onError: (m) => say(`simulator: ${m}`) },
    logger: demoApiLogger(logFormat(), rootLogger),
    log: say,
  });
  // The stack builds its own config; where the Web UI is comes from the operator's (the API reads it per request).
  stack.loaded.config.temporal.webUiUrl = config.temporal.webUiUrl;
  // A pool per demo run: the simulator (and every runner registered with it) lives only as long as this process.
  const pool = poolSettingsSchema.parse({
    name: `demo-${Date.now().toString(36)}`,
    github: { scope: { kind: 'repo', owner: 'demo', repo: 'app' } },
    labels: ['self-hosted', 'linux'],
    provider: stack.loaded.config.providers[0]!.name,
    minIdleRunners: 1,
    maxRunners: 4,
    bootstrapTimeout: '2m',
    idleTimeout: '10m',
  });
  // A demo that crashed or was killed left its pool behind; that pool would take this demo's jobs.
  const leftovers = await findDemoPools(stack.client, config.temporal.taskQueue);
  if (leftovers.length > 0) await removeDemoPools(stack.client, leftovers, { waitMs: 15_000, log: say });
  await seedPools(stack.client, stack.loaded, [pool], demoPoolMemo());
  const jobs = Number(process.env.RUNNERFLOW_DEMO_JOBS ?? 3);
  for (let i = 0; i < jobs; i++) stack.sim.queueJob({ repository: 'demo/app', labels: ['self-hosted', 'linux'], name: `demo-job-${i + 1}` });
  say(`queued ${jobs} demo jobs in the simulator (RUNNERFLOW_DEMO_JOBS to change)`);
  banner(stack.api.url, stack.adminToken, config.temporal.webUiUrl);
  say(`GitHub simulator: ${stack.sim.url} (jobs: ${stack.sim.controlUrl}/jobs)`);
  const stopStory = startDemoStory({ client: stack.client, pool: pool.name, jobs: () => stack.sim.jobs(), emit: storyEmitter(logFormat(), rootLogger.child({ component: 'demo' })) });
  return async () => {
    stopStory();
    // Runners of this demo cannot outlive its simulator: drop them now rather than leave them for the sweep.
    // Without Temporal nothing can be removed; the next demo does it.
    const budget = Math.max(1_000, SHUTDOWN_TIMEOUT_MS / 2);
    const removed = (await temporalAnswers(config.temporal.address, 1_000))
      ? await within(removeDemoPools(stack.client, [pool.name], { waitMs: budget - 500 }).then(() => true), budget)
      : undefined;
    if (!removed) say(`demo pool "${pool.name}" not removed (Temporal unreachable or slow); the next demo removes it`);
    await within(stack.stop(), Math.max(1_000, SHUTDOWN_TIMEOUT_MS / 3));
  };
}

async function runConfigured(loaded: LoadedConfig): Promise<() => Promise<void>> {
  const { config, env } = loaded;
  // Not in the demo: its GitHub is a simulator no other installation shares.
  for (const warning of configWarnings(config)) say(`warning: ${warning}`);
  // One key for minting (worker) and verifying (API) instance tokens in this process.
  if (!config.api.instanceTokenSecret) {
    env.RUNNERFLOW_INSTANCE_TOKEN_SECRET = randomBytes(32).toString('base64url');
    config.api.instanceTokenSecret = { env: 'RUNNERFLOW_INSTANCE_TOKEN_SECRET' };
  }
  const connection = await connectTemporal({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const github = createGitHubRegistry(config, env, rootLogger.child({ component: 'github' }));
  const api = await serveApi({ loaded, client, github, logger: rootLogger.child({ component: 'api' }) });
  const worker = await startWorker({ loaded, github, instanceTokenKey: resolveSecret(config.api.instanceTokenSecret, env)!, apiUrl: api.url, log: say, logger: rootLogger.child({ component: 'worker' }) });
  await seedPools(client, loaded, config.pools);
  banner(api.url, adminTokenSource(config), config.temporal.webUiUrl);
  return async () => {
    await within(worker.stop(), SHUTDOWN_TIMEOUT_MS / 2);
    await within(api.close(), 1_000);
    await within(connection.close(), 1_000);
  };
}

/**
 * The Web UI of a dev server started with TEMPORAL_UI_PORT (temporal-dev.sh serves it there),
 * when no URL is configured (TEMPORAL_UI_URL or temporal.webUiUrl): a configured one always wins.
 */
function localWebUi(config: LoadedConfig['config']): string | undefined {
  const port = process.env.TEMPORAL_UI_PORT;
  if (process.env.TEMPORAL_UI_URL || config.temporal.webUiUrl !== DEFAULT_WEB_UI_URL || !port || port === 'off') return undefined;
  return `http://127.0.0.1:${port}`;
}

/** Where the admin token comes from (never the token itself), or undefined when none is configured. */
function adminTokenSource(config: LoadedConfig['config']): string | undefined {
  const ref = config.api.adminToken;
  if (!ref) return undefined;
  return 'env' in ref ? `from ${ref.env}` : `from ${ref.file}`;
}

function banner(apiUrl: string, adminToken: string | undefined, webUiUrl: string): void {
  // Without a token the admin routes refuse everyone (the API has warned); say so here too rather than point at a token that does not exist.
  say(`HTTP API: ${apiUrl} (${adminToken ? `admin token: ${adminToken}` : 'no admin token configured: /api/v1 refuses every caller until RUNNERFLOW_ADMIN_TOKEN or api.adminToken is set'})`);
  if (adminToken) say(`Dashboard: ${apiUrl}/ui (sign in with the admin token)`);
  say(`Temporal Web UI: ${webUiUrl} (find runners with RunnerStatus="running")`);
  say(`CLI: RUNNERFLOW_URL=${apiUrl} RUNNERFLOW_ADMIN_TOKEN=<token> npx runnerflow runner list`);
}

async function main(): Promise<void> {
  // Shutdown is ours to order (drop demo runners first, then stop the worker), so the SDK must not act on signals itself.
  installTemporalRuntime(rootLogger.pino, sdkRuntimeOptionsFromEnv());
  // Read here, not at load, so a bad value is reported like any other configuration error.
  SHUTDOWN_TIMEOUT_MS = shutdownTimeout(process.env.RUNNERFLOW_SHUTDOWN_TIMEOUT);
  const loaded = loadConfig();
  say(`config: ${loaded.source}`);
  const ui = localWebUi(loaded.config);
  if (ui) loaded.config.temporal.webUiUrl = ui;
  await ensureTemporal(loaded.config.temporal.address);
  const stop = loaded.config.github.credentials.length === 0 ? await runDemo(loaded) : await runConfigured(loaded);
  let stoppingSince: number | undefined;
  const shutdown = (signal: string) => {
    if (stoppingSince !== undefined) {
      // One Ctrl-C can arrive twice: from the terminal and relayed by npm or tsx.
      if (Date.now() - stoppingSince < SIGNAL_ECHO_MS) return;
      say(`${signal} again: exiting now`);
      process.exit(130);
    }
    stoppingSince = Date.now();
    say(`${signal}: stopping worker and API (the Temporal dev server keeps running; ./temporal-dev.sh stop ends it; ${signal} again to exit at once)`);
    // Whatever hangs (an unreachable Temporal, a stuck provider call), the process ends within the bound.
    setTimeout(() => {
      say(`clean-up did not finish within ${SHUTDOWN_TIMEOUT_MS} ms: exiting`);
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err: unknown) => {
  // Mistakes of setup (the config, the address, the dev server) are one line; anything else is a bug, shown whole.
  const setup = err instanceof ConfigError || err instanceof ListenError || err instanceof DevServerError;
  console.error(setup ? `runnerflow: ${err.message}` : err);
  process.exit(1);
});
