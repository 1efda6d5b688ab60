/**
 * The whole of runnerflow in one process against one Temporal: the GitHub
 * simulator standing in for GitHub, the HTTP API and a worker. `npm start`'s
 * demo, the end-to-end tests and the benchmarks all run on this.
 */
import { Client } from '@temporalio/client';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { scratchDir } from './scratch-dir';
import type { LoadedConfig } from '../config/load';
import { parseConfig } from '../config/load';
import type { Logger } from '../api/deps';
import { silentLogger } from '../observability/logger';
import type { HttpServer } from '../api/node-server';
import { serveApi } from '../api/serve';
import { createGitHubRegistry } from '../github/registry';
import { startGitHubSimulator, type GitHubSimulator, type GitHubSimulatorOptions } from '../github/simulator/server';
import type { ProviderPort } from '../providers/port';
import { asConfigured } from '../providers/registry';
import { startWorker, type StartedWorker } from '../worker/start';
import { SimulatedMachinesProvider } from './simulated-machines';
import { connectTemporal } from '../api/temporal/connection';

export interface DevStackOptions {
  temporalAddress: string;
  namespace?: string;
  taskQueue: string;
  /** `simulated` runs runner agents inside the simulator; otherwise the config's providers (local processes by default). */
  machines: 'simulated' | 'configured';
  /** Name of the simulated provider (default `simulated`); a unique one keeps per-provider schedules of parallel stacks apart. */
  simulatedProvider?: string;
  /** Extra config merged into the generated one (providers, timings, pools, ...). */
  config?: Record<string, unknown>;
  /**
   * GitHub credentials as a GitHub App (a key made for the stack; the simulator takes any
   * signature) under this name, instead of a token named `default`. A unique name keeps
   * the per-credentials schedules of parallel stacks apart; pools must name it.
   */
  githubAppCredentials?: string;
  /** The token credentials' name (`default` unless given); a unique one keeps their redelivery schedule apart. */
  githubTokenCredentials?: string;
  /** The credentials' secret (the token, or the App's private key) read from this file instead of the environment. */
  githubSecretFile?: string;
  listen?: string;
  simulator?: GitHubSimulatorOptions;
  workflowBundlePath?: string;
  logger?: Logger;
  log?: (message: string) => void;
}

export interface DevStack {
  sim: GitHubSimulator;
  /** The simulated machines, when `machines` is `simulated`. */
  simulatedMachines?: SimulatedMachinesProvider;
  api: HttpServer;
  worker: StartedWorker;
  client: Client;
  loaded: LoadedConfig;
  adminToken: string;
  webhookSecret: string;
  /** Directory of the simulated machines (a fake provider state dir), when `machines` is `simulated`. */
  machinesDir?: string;
  stop(): Promise<void>;
}

export const SIMULATED_PROVIDER = 'simulated';

/** Fresh secrets for one stack, as the environment of every process in it. */
export function stackSecrets(options: { app?: boolean } = {}): NodeJS.ProcessEnv {
  return {
    ...(options.app ? { RUNNERFLOW_SIMULATOR_APP_KEY: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() } : {}),
    RUNNERFLOW_ADMIN_TOKEN: process.env.RUNNERFLOW_ADMIN_TOKEN ?? randomBytes(18).toString('base64url'),
    RUNNERFLOW_WEBHOOK_SECRET: process.env.RUNNERFLOW_WEBHOOK_SECRET ?? randomBytes(18).toString('base64url'),
    RUNNERFLOW_INSTANCE_TOKEN_SECRET: randomBytes(32).toString('base64url'),
    RUNNERFLOW_SIMULATOR_TOKEN: 'ghp_simulated',
  };
}

export interface StackConfigInput {
  temporalAddress: string;
  namespace?: string;
  taskQueue: string;
  listen?: string;
  /** The GitHub simulator's API URL. */
  githubUrl: string;
  /** State directory of the simulated machines, when the stack runs them. */
  machinesDir?: string;
  /** Their provider's name (`simulated` by default). */
  simulatedProvider?: string;
  /** GitHub App credentials under this name instead of a token (see DevStackOptions). */
  githubAppCredentials?: string;
  githubTokenCredentials?: string;
  githubSecretFile?: string;
  extra?: Record<string, unknown>;
}

/** The config of a dev stack (secrets by reference to `stackSecrets()`'s variables), before parsing. */
export function stackConfig(input: StackConfigInput): Record<string, unknown> {
  const extra = input.extra ?? {};
  return {
    // Token credentials are named `default` in every such stack, so their redelivery schedule would be one
    // shared by parallel stacks on a server: off unless asked for (App credentials get a name of their own).
    ...(input.githubAppCredentials || input.githubTokenCredentials ? {} : { redelivery: { enabled: false } }),
    ...extra,
    temporal: { ...((extra.temporal as Record<string, unknown> | undefined) ?? {}), address: input.temporalAddress, namespace: input.namespace ?? 'default', taskQueue: input.taskQueue },
    api: {
      listen: input.listen ?? '127.0.0.1:0',
      adminToken: { env: 'RUNNERFLOW_ADMIN_TOKEN' },
      webhookSecret: { env: 'RUNNERFLOW_WEBHOOK_SECRET' },
      instanceTokenSecret: { env: 'RUNNERFLOW_INSTANCE_TOKEN_SECRET' },
      ...((extra.api as Record<string, unknown> | undefined) ?? {}),
    },
    github: {
      ...((extra.github as Record<string, unknown> | undefined) ?? {}),
      credentials: [
        input.githubAppCredentials
          ? { name: input.githubAppCredentials, apiUrl: input.githubUrl, auth: { type: 'app', appId: 1, installationId: 1, privateKey: input.githubSecretFile ? { file: input.githubSecretFile } : { env: 'RUNNERFLOW_SIMULATOR_APP_KEY' } } }
          : { name: input.githubTokenCredentials ?? 'default', apiUrl: input.githubUrl, auth: { type: 'pat', token: input.githubSecretFile ? { file: input.githubSecretFile } : { env: 'RUNNERFLOW_SIMULATOR_TOKEN' } } },
      ],
    },
    // The simulated provider is not built from config; declaring it lets pools name it.
    providers: input.machinesDir
      ? [{ type: 'fake', name: input.simulatedProvider ?? SIMULATED_PROVIDER, stateDir: input.machinesDir }, ...((extra.providers as unknown[]) ?? [])]
      : extra.providers,
  };
}

export async function startDevStack(options: DevStackOptions): Promise<DevStack> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...stackSecrets({ app: options.githubAppCredentials !== undefined }) };
  const sim = await startGitHubSimulator({ webhookSecret: env.RUNNERFLOW_WEBHOOK_SECRET, ...options.simulator });
  const machinesDir = options.machines === 'simulated' ? scratchDir('runnerflow-machines-') : undefined;
  const simulatedName = options.simulatedProvider ?? SIMULATED_PROVIDER;
  const config = parseConfig(
    stackConfig({
      temporalAddress: options.temporalAddress,
      taskQueue: options.taskQueue,
      githubUrl: sim.url,
      ...(options.namespace ? { namespace: options.namespace } : {}),
      ...(options.listen ? { listen: options.listen } : {}),
      ...(machinesDir ? { machinesDir, simulatedProvider: simulatedName } : {}),
      ...(options.githubAppCredentials ? { githubAppCredentials: options.githubAppCredentials } : {}),
      ...(options.githubTokenCredentials ? { githubTokenCredentials: options.githubTokenCredentials } : {}),
      ...(options.githubSecretFile ? { githubSecretFile: options.githubSecretFile } : {}),
      ...(options.config ? { extra: options.config } : {}),
    }),
    'dev stack config',
  );
  const loaded: LoadedConfig = { config, source: 'dev stack', env };
  const logger = options.logger ?? silentLogger;
  const connection = await connectTemporal({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const github = createGitHubRegistry(config, env, { debug: () => undefined, info: (message, fields) => logger.info(message, fields), warn: (message, fields) => logger.warn(message, fields) });

  const api = await serveApi({ loaded, client, github, logger });
  sim.setWebhook({ url: `${api.url}/webhooks/github`, secret: env.RUNNERFLOW_WEBHOOK_SECRET });
  // Where the simulator delivers: the webhook a token's redelivery follows, when the stack runs it.
  config.redelivery.webhookUrl ??= `${api.url}/webhooks/github`;

  let providers: Map<string, ProviderPort> | undefined;
  const simulatedEntry = config.providers.find((p) => p.name === simulatedName);
  const simulatedMachines = machinesDir && simulatedEntry ? asConfigured(new SimulatedMachinesProvider(simulatedName, machinesDir, sim), simulatedEntry) : undefined;
  if (simulatedMachines) providers = new Map<string, ProviderPort>([[simulatedName, simulatedMachines]]);
  const worker = await startWorker({
    loaded,
    github,
    apiUrl: api.url,
    instanceTokenKey: env.RUNNERFLOW_INSTANCE_TOKEN_SECRET!,
    ...(providers ? { providers } : {}),
    ...(options.workflowBundlePath ? { workflowBundlePath: options.workflowBundlePath } : {}),
    log: options.log ?? (() => undefined),
  });

  return {
    sim,
    ...(simulatedMachines ? { simulatedMachines } : {}),
    api,
    worker,
    client,
    loaded,
    adminToken: env.RUNNERFLOW_ADMIN_TOKEN!,
    webhookSecret: env.RUNNERFLOW_WEBHOOK_SECRET!,
    ...(machinesDir ? { machinesDir } : {}),
    async stop() {
      await worker.stop();
      await api.close();
      await sim.close();
      await connection.close();
      // The machines' bookkeeping may live in memory (`scratchDir`); a stack stopped is done with it.
      if (machinesDir) rmSync(machinesDir, { recursive: true, force: true });
    },
  };
}

/** Calls a runnerflow REST API as an admin. */
export async function adminRequest(baseUrl: string, adminToken: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

/** Calls the stack's REST API as an admin. */
export function apiRequest(stack: DevStack, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  return adminRequest(stack.api.url, stack.adminToken, method, path, body);
}
