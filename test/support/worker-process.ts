/**
 * A worker in its own process, for tests that kill a worker mid-activity.
 * Env: TEMPORAL_ADDRESS, TASK_QUEUE, BUNDLE_PATH; FAKE_DIR for a fake provider
 * named "fake" (FAKE_INLINE_MS: its inline create and delete bound); SIM_URL for GitHub through the simulator (a GitHub double
 * otherwise); DIE_AFTER_REPORT=<status> to SIGKILL this process the moment a runner's report
 * of that status has reached its pool, before the workflow task that sent it is recorded;
 * DIE_AFTER_DELETE=1 to SIGKILL it the moment the fake provider has deleted a machine.
 * Prints "ready" once polling.
 */
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { createPoolActivities, type ReportToPoolArgs } from '../../activities/pool-activities';
import { connectTemporal } from '../../api/temporal/connection';
import { FakeProvider } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { createRunnerflowWorker } from '../../worker/create-worker';
import { GitHubDouble } from './github-double';
import { testInstanceDeps } from './instance-deps';
import { simulatorRegistry } from './simulator-registry';

Runtime.install({ logger: new DefaultLogger('ERROR') });
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const connection = await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') });
const providers = new Map<string, ProviderPort>();
if (process.env.FAKE_DIR) {
  const inlineMs = Number(process.env.FAKE_INLINE_MS ?? 0);
  const fake = Object.assign(new FakeProvider({ name: 'fake', stateDir: process.env.FAKE_DIR }), { inlineCreateTimeoutMs: inlineMs, inlineDeleteTimeoutMs: inlineMs });
  if (process.env.DIE_AFTER_DELETE) {
    const deleteInstance = fake.deleteInstance.bind(fake);
    fake.deleteInstance = async (...args) => {
      await deleteInstance(...args);
      process.kill(process.pid, 'SIGKILL');
    };
  }
  providers.set('fake', fake);
}
const double = new GitHubDouble();
const dieAfterReport = process.env.DIE_AFTER_REPORT;
const clientConnection = await connectTemporal({ address: env('TEMPORAL_ADDRESS') });
const poolActivities = createPoolActivities({ client: new Client({ connection: clientConnection }), eagerStarts: new Client({ connection }) });
const extraActivities: Record<string, (args: ReportToPoolArgs) => Promise<void>> = dieAfterReport
  ? {
      async reportToPool(args: ReportToPoolArgs): Promise<void> {
        await poolActivities.reportToPool(args);
        if (args.report.status === dieAfterReport) process.kill(process.pid, 'SIGKILL');
      },
    }
  : {};
const worker = await createRunnerflowWorker({
  connection,
  clientConnection,
  namespace: 'default',
  taskQueue: env('TASK_QUEUE'),
  workflowBundlePath: env('BUNDLE_PATH'),
  activities: testInstanceDeps(providers, process.env.SIM_URL ? simulatorRegistry(process.env.SIM_URL) : { get: () => double }),
  extraActivities,
});
const running = worker.run();
console.log('ready');
await running;
