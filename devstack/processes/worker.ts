/**
 * A worker of a multi-process dev stack, on simulated machines: the config
 * names one `fake` provider (its state directory, shared by every worker), and
 * its machines run agents in the GitHub simulator at RUNNERFLOW_SIMULATOR_URL.
 * BUNDLE_PATH (optional) is a prebuilt workflow bundle, for quick restarts.
 * Prints "ready" once polling.
 */
import { loadConfig, resolveSecret } from '../../config/load';
import { createGitHubRegistry } from '../../github/registry';
import { asConfigured } from '../../providers/registry';
import { startWorker } from '../../worker/start';
import { installQuietRuntime } from '../quiet-runtime';
import { SimulatedMachinesProvider, simulatorAgentsOverHttp } from '../simulated-machines';
import { requiredEnv } from './env';

// RUNNERFLOW_STACK_SDK_METRICS=127.0.0.1:9465 serves the SDK's own metrics for a bench to read.
installQuietRuntime(process.env.RUNNERFLOW_STACK_SDK_METRICS);
const loaded = loadConfig();
const machines = loaded.config.providers.find((p) => p.type === 'fake');
if (machines?.type !== 'fake') throw new Error('the config must declare the simulated machines as a provider of type fake');
const sim = simulatorAgentsOverHttp(`${requiredEnv('RUNNERFLOW_SIMULATOR_URL')}/_sim`);
const started = await startWorker({
  loaded,
  github: createGitHubRegistry(loaded.config, loaded.env),
  instanceTokenKey: resolveSecret(loaded.config.api.instanceTokenSecret, loaded.env)!,
  providers: new Map([[machines.name, asConfigured(new SimulatedMachinesProvider(machines.name, machines.stateDir, sim), machines)]]),
  ...(process.env.BUNDLE_PATH ? { workflowBundlePath: process.env.BUNDLE_PATH } : {}),
  log: () => undefined,
});
process.once('SIGTERM', () => started.worker.shutdown());
console.log('ready');
await started.running;
