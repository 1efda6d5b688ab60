/**
 * Builds and starts a runnerflow worker from a loaded config: the one place that
 * wires providers, GitHub and instance tokens into the activities.
 */
import { Client } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createGitHubSweepActivities } from '../activities/github-sweep-activities';
import { silentLogger } from '../observability/logger';
import type { Logger } from '../api/deps';
import { PoolDirectory } from '../api/pool-directory';
import { TemporalJobSink } from '../api/temporal-job-sink';
import { createLivenessActivities } from '../activities/liveness-activities';
import { createSweepActivities } from '../activities/sweep-activities';
import { mintInstanceToken } from '../api/instance-token';
import { seal, unseal } from '../api/sealed-secret';
import type { LoadedConfig } from '../config/load';
import { workflowCacheAdvice } from '../config/workflow-cache';
import type { GitHubRegistry } from '../github/registry';
import { createProviders } from '../providers/registry';
import type { ProviderPort } from '../providers/port';
import { createRunnerflowWorker } from './create-worker';
import { ensureSearchAttributes } from './search-attributes';
import { ensureLivenessSchedules } from './liveness-schedule';
import { ensureRedeliverySchedules } from './redelivery-schedule';
import { createWebhookRedeliveryActivities, poolScopesFrom } from '../activities/webhook-redelivery-activities';
import { ensureSweepSchedules } from './sweep-schedule';
import { connectTemporal } from '../api/temporal/connection';

export interface StartedWorker {
  worker: Worker;
  providers: Map<string, ProviderPort>;
  /** Resolves when the worker has stopped. */
  running: Promise<void>;
  stop(): Promise<void>;
}

export interface StartWorkerOptions {
  loaded: LoadedConfig;
  github: GitHubRegistry;
  instanceTokenKey: string;
  providers?: Map<string, ProviderPort>;
  workflowBundlePath?: string;
  log?: (message: string) => void;
  /** Where the sweep's re-routing of lost jobs logs what it did (silent when not given). */
  logger?: Logger;
  /**
   * Where instances call back when the config names no `api.publicUrl`: the address of an API
   * this process serves on a port it picked. Not written into the config, which would make it
   * look like an address GitHub delivers to.
   */
  apiUrl?: string;
}

function callbackBaseUrl(options: StartWorkerOptions): string {
  const { api } = options.loaded.config;
  return (api.publicUrl ?? options.apiUrl ?? `http://${api.listen}`).replace(/\/+$/, '');
}

export async function startWorker(options: StartWorkerOptions): Promise<StartedWorker> {
  const { config } = options.loaded;
  const log = options.log ?? ((m: string) => console.log(m));

  // Kept open while the worker runs: the sweep activities read visibility through it.
  const clientConnection = await connectTemporal({ address: config.temporal.address });
  const client = new Client({ connection: clientConnection, namespace: config.temporal.namespace });
  try {
    const added = await ensureSearchAttributes(clientConnection, config.temporal.namespace);
    if (added.length > 0) log(`registered search attributes: ${added.join(', ')}`);
    for (const s of await ensureSweepSchedules(client, config, config.temporal.taskQueue)) {
      if (s.change !== 'unchanged') log(`sweep schedule ${s.scheduleId}: ${s.change}`);
    }
    for (const s of await ensureLivenessSchedules(client, config, config.temporal.taskQueue)) {
      if (s.change !== 'unchanged') log(`liveness schedule ${s.scheduleId}: ${s.change}`);
    }
    for (const s of await ensureRedeliverySchedules(client, config, config.temporal.taskQueue)) {
      if (s.change !== 'unchanged') log(`redelivery schedule ${s.scheduleId}: ${s.change}`);
    }
    // Pools made after the start are the status check's to count; a listing that fails says nothing.
    const pools = await new PoolDirectory(client, 0, config.temporal.taskQueue).fetch().catch(() => []);
    const advice = workflowCacheAdvice(pools.length, 0, config.temporal.workflowCacheSize);
    if (advice && options.logger) options.logger.warn(advice);
    else if (advice) log(advice);
  } catch (err) {
    await clientConnection.close();
    throw err;
  }

  const providers = options.providers ?? createProviders(config, options.loaded.env);
  const base = callbackBaseUrl(options);
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await createRunnerflowWorker({
    connection,
    clientConnection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(options.workflowBundlePath ? { workflowBundlePath: options.workflowBundlePath } : {}),
    workflowStackTraces: config.temporal.workflowStackTraces,
    maxCachedWorkflows: config.temporal.workflowCacheSize,
    log,
    warn: (message) => (options.logger ? options.logger.warn(message) : log(message)),
    activities: {
      controllerId: config.controllerId,
      providers,
      github: options.github,
      callbackUrl: `${base}/api/v1/callbacks/status`,
      metadataUrl: `${base}/api/v1/metadata`,
      mintInstanceToken: (claims, ttlMs) => mintInstanceToken(claims, options.instanceTokenKey, ttlMs),
      sealSecret: (plain) => seal(plain, options.instanceTokenKey),
      unsealSecret: (sealed) => unseal(sealed, options.instanceTokenKey),
    },
    extraActivities: {
      ...createSweepActivities({ controllerId: config.controllerId, providers, client, namespace: config.temporal.namespace, github: options.github }),
      ...createGitHubSweepActivities({
        controllerId: config.controllerId,
        client,
        namespace: config.temporal.namespace,
        github: options.github,
        jobs: new TemporalJobSink({ client, taskQueue: config.temporal.taskQueue, pools: new PoolDirectory(client, 5_000, config.temporal.taskQueue), logger: options.logger ?? silentLogger, queryTimeoutMs: 5_000 }),
      }),
      ...createLivenessActivities({ controllerId: config.controllerId, providers, github: options.github, client, namespace: config.temporal.namespace, stuckPoolAfterMs: config.liveness.stuckPoolAfter, poolAskIntervalMs: config.liveness.poolAskInterval }),
      ...createWebhookRedeliveryActivities({
        ...(options.github.hooks ? { hooks: (name: string) => options.github.hooks!(name) } : {}),
        ...(options.github.scopeHooks ? { scopeHooks: (name: string) => options.github.scopeHooks!(name) } : {}),
        poolScopes: poolScopesFrom(client, config.temporal.taskQueue),
      }),
    },
  });
  const running = worker.run().finally(async () => {
    await connection.close();
    await clientConnection.close();
    await Promise.allSettled([...providers.values()].map((p) => p.close?.()));
  });
  log(`worker polling task queue "${config.temporal.taskQueue}" on ${config.temporal.address} (namespace ${config.temporal.namespace})`);
  return {
    worker,
    providers,
    running,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}
