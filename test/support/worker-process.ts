/**
 * A worker in its own process, for tests that kill a worker mid-activity.
 * Env: TEMPORAL_ADDRESS, TASK_QUEUE, FAKE_DIR, BUNDLE_PATH. Prints "ready" once polling.
 */
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { FakeProvider } from '../../providers/fake';
import { createRunnerflowWorker } from '../../worker/create-worker';
import { GitHubDouble } from './github-double';

Runtime.install({ logger: new DefaultLogger('ERROR') });
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const connection = await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') });
const github = new GitHubDouble();
const worker = await createRunnerflowWorker({
  connection,
  namespace: 'default',
  taskQueue: env('TASK_QUEUE'),
  workflowBundlePath: env('BUNDLE_PATH'),
  activities: {
    controllerId: 'test-controller',
    providers: new Map([['fake', new FakeProvider({ name: 'fake', stateDir: env('FAKE_DIR') })]]),
    github: { get: () => github },
    callbackUrl: 'http://127.0.0.1:9/api/v1/callbacks/status',
    metadataUrl: 'http://127.0.0.1:9/api/v1/metadata',
    mintInstanceToken: async (claims) => `token-for-${claims.instance}`,
  },
});
const running = worker.run();
console.log('ready');
await running;
