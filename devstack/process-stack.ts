/**
 * runnerflow as it scales out: the GitHub simulator in this process, and API
 * processes and worker processes of their own against one Temporal server,
 * sharing nothing but Temporal (and the simulated machines' state directory,
 * which stands in for a cloud). Webhooks go round robin over the APIs; every
 * runner calls back to the first API.
 */
import { Client } from '@temporalio/client';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from './scratch-dir';
import { startGitHubSimulator, type GitHubSimulator, type GitHubSimulatorOptions } from '../github/simulator/server';
import { FakeProviderControl } from '../providers/fake';
import { spawnStackProcess, type StackProcess } from './processes/spawn';
import { adminRequest, stackConfig, stackSecrets } from './stack';
import { connectTemporal } from '../api/temporal/connection';

export interface ProcessStackOptions {
  temporalAddress: string;
  taskQueue: string;
  workers: number;
  apis: number;
  /** Name of the simulated machines' provider (`simulated` by default); per-provider schedules of parallel stacks need different ones. */
  simulatedProvider?: string;
  /** Extra config (timings, controllerId, sweep, ...). */
  config?: Record<string, unknown>;
  /** The token credentials' name (`default` unless given); a unique one keeps their redelivery schedule apart. */
  githubTokenCredentials?: string;
  simulator?: GitHubSimulatorOptions;
  workflowBundlePath?: string;
}

export interface ProcessStack {
  sim: GitHubSimulator;
  client: Client;
  machines: FakeProviderControl;
  machinesDir: string;
  apis: StackProcess[];
  /** Current worker processes by slot; a restarted worker takes its slot. */
  workers: StackProcess[];
  adminToken: string;
  /** What the simulated GitHub signs its webhooks with. */
  webhookSecret: string;
  taskQueue: string;
  /** Starts (or restarts) the worker of a slot. */
  startWorker(slot: number): Promise<StackProcess>;
  /**
   * Starts the API of a slot again, on the address it listened on: GitHub's webhook and every
   * machine's callback URL name it.
   */
  restartApi(slot: number): Promise<StackProcess>;
  stop(): Promise<void>;
}

export async function startProcessStack(options: ProcessStackOptions): Promise<ProcessStack> {
  const dir = scratchDir('runnerflow-stack-');
  const machinesDir = join(dir, 'machines');
  const secrets = stackSecrets();
  const sim = await startGitHubSimulator({ webhookSecret: secrets.RUNNERFLOW_WEBHOOK_SECRET, onError: () => undefined, ...options.simulator });
  const writeConfig = (name: string, extraApi: Record<string, unknown>): string => {
    const extra = { ...options.config, api: { ...((options.config?.api as Record<string, unknown> | undefined) ?? {}), ...extraApi } };
    const path = join(dir, name);
    const config = stackConfig({
      temporalAddress: options.temporalAddress,
      taskQueue: options.taskQueue,
      githubUrl: sim.url,
      machinesDir,
      ...(options.simulatedProvider ? { simulatedProvider: options.simulatedProvider } : {}),
      ...(options.githubTokenCredentials ? { githubTokenCredentials: options.githubTokenCredentials } : {}),
      extra,
    });
    writeFileSync(path, JSON.stringify(config, null, 2));
    return path;
  };
  const env = (configPath: string): NodeJS.ProcessEnv => ({
    ...process.env,
    ...secrets,
    RUNNERFLOW_CONFIG: configPath,
    TEMPORAL_ADDRESS: options.temporalAddress,
    RUNNERFLOW_TASK_QUEUE: options.taskQueue,
    RUNNERFLOW_SIMULATOR_URL: sim.url,
    ...(options.workflowBundlePath ? { BUNDLE_PATH: options.workflowBundlePath } : {}),
  });

  const connection = await connectTemporal({ address: options.temporalAddress });
  const client = new Client({ connection, namespace: 'default' });
  const apiConfig = writeConfig('api.json', {});
  const apis = await Promise.all(Array.from({ length: options.apis }, () => spawnStackProcess('api', env(apiConfig))));
  sim.setWebhook({ urls: apis.map((a) => `${a.url}/webhooks/github`), secret: secrets.RUNNERFLOW_WEBHOOK_SECRET });
  const workerConfig = writeConfig('worker.json', { publicUrl: apis[0]!.url });

  const workers: StackProcess[] = [];
  const startWorker = async (slot: number): Promise<StackProcess> => {
    const worker = await spawnStackProcess('worker', env(workerConfig));
    workers[slot] = worker;
    return worker;
  };
  for (let slot = 0; slot < options.workers; slot++) await startWorker(slot);
  const restartApi = async (slot: number): Promise<StackProcess> => {
    const { hostname, port } = new URL(apis[slot]!.url!);
    const api = await spawnStackProcess('api', { ...env(apiConfig), RUNNERFLOW_LISTEN: `${hostname}:${port}` });
    apis[slot] = api;
    return api;
  };

  return {
    sim,
    client,
    machines: new FakeProviderControl(machinesDir),
    machinesDir,
    apis,
    workers,
    adminToken: secrets.RUNNERFLOW_ADMIN_TOKEN!,
    webhookSecret: secrets.RUNNERFLOW_WEBHOOK_SECRET!,
    taskQueue: options.taskQueue,
    startWorker,
    restartApi,
    async stop() {
      // A profiled process writes its profile only when it exits by itself: ask first, then insist.
      if (process.env.RUNNERFLOW_STACK_NODE_ARGS) {
        await Promise.race([Promise.all([...workers, ...apis].map((p) => p.kill('SIGTERM'))), new Promise((resolve) => setTimeout(resolve, 10_000))]);
      }
      await Promise.all([...workers, ...apis].map((p) => p.kill('SIGKILL')));
      await sim.close();
      await connection.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Calls one of the stack's APIs as an admin. */
export function processStackRequest(stack: ProcessStack, method: string, path: string, body?: unknown, api = 0): Promise<{ status: number; body: unknown }> {
  return adminRequest(stack.apis[api]!.url!, stack.adminToken, method, path, body);
}
