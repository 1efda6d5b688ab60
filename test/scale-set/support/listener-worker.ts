/**
 * A worker in its own process whose GitHub is the simulator at SIM_URL, for
 * tests that kill a worker in the middle of a scale set's long poll.
 * Env: TEMPORAL_ADDRESS, TASK_QUEUE, SIM_URL, BUNDLE_PATH. Prints "ready" once polling.
 */
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { createRunnerflowWorker } from '../../../worker/create-worker';
import { simulatorRegistry } from './simulator-registry';

Runtime.install({ logger: new DefaultLogger('ERROR') });
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const connection = await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') });
const worker = await createRunnerflowWorker({
  connection,
  namespace: 'default',
  taskQueue: env('TASK_QUEUE'),
  workflowBundlePath: env('BUNDLE_PATH'),
  activities: {
    controllerId: 'test-controller',
    providers: new Map(),
    github: simulatorRegistry(env('SIM_URL')),
    callbackUrl: 'http://127.0.0.1:9/api/v1/callbacks/status',
    metadataUrl: 'http://127.0.0.1:9/api/v1/metadata',
    mintInstanceToken: async (claims) => `token-for-${claims.instance}`,
  },
});
const running = worker.run();
console.log('ready');
await running;
