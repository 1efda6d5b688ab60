/**
 * Stack traces in workflow code are off unless `temporal.workflowStackTraces` turns them
 * on (workflows/stack-traces-off.ts says why). Read through what an operator sees: the
 * Temporal UI's stack trace query on a runner waiting for its job.
 */
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema';
import { instanceInput, startTestWorker, uniqueName, useClient, type TestWorker } from '../support/temporal';
import { startInstance, waitForStatus } from './helpers';

const temporal = useClient();

async function stackOfARunningRunner(worker: TestWorker): Promise<string> {
  const handle = await startInstance(temporal.client, worker.taskQueue, instanceInput(uniqueName('stack')));
  await waitForStatus(handle, 'running');
  const stack = await handle.query<string>('__stack_trace');
  await handle.terminate('test done');
  return stack;
}

describe('stack traces in workflow code', () => {
  it('are off by default', async () => {
    expect(configSchema.parse({}).temporal.workflowStackTraces).toBe(false);
    // The run's prebuilt bundle is built as a worker with the default config builds it.
    const worker = await startTestWorker();
    try {
      const stack = await stackOfARunningRunner(worker);
      expect(stack).not.toContain('runner-instance.ts');
      expect(stack).not.toMatch(/^\s+at /m);
    } finally {
      await worker.stop();
    }
  });

  it('with temporal.workflowStackTraces, the query shows where a runner waits', async () => {
    const worker = await startTestWorker({ workflowStackTraces: true });
    try {
      const stack = await stackOfARunningRunner(worker);
      // Where the runner waits for its job to end, in the source, not the bundle.
      expect(stack).toMatch(/^\s+at untilLeaving \(.*workflows\/runner-instance\.ts:\d+:\d+\)$/m);
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
