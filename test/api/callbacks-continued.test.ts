/**
 * A long-lived instance continues as new: same machine, same agent, new run
 * id. The agent's token was minted by the first run, and must still speak for
 * the instance; a token of a chain that has ended still must not.
 */
import { describe, expect, it } from 'vitest';
import { mintInstanceToken } from '../../api/instance-token';
import { forceDeleteSignal, runnerStatusSignal, runnerWorkflowId } from '../../workflows/messages';
import { startInstance, waitForStatus } from '../instance/helpers';
import { eventually, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { signalsOf, signalsOfLaterRuns } from './history';
import { expectError, INSTANCE_TOKEN_KEY, testApp } from './support';

const env = useTestWorker();

describe('instance callbacks after the instance continued as new', () => {
  it("accepts the first run's token and delivers to the live run; refuses it once the instance is gone", async () => {
    const name = uniqueName('continued');
    const handle = await startInstance(env.client, env.w.taskQueue, { ...instanceInput(name), historyLimit: 40 });
    await waitForStatus(handle, 'running');
    const firstRunId = (await handle.describe()).runId;
    const token = await mintInstanceToken({ instance: name, runId: firstRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
    // Repeated idle reports change nothing but grow the history until the instance continues as new.
    await eventually(async () => {
      await handle.signal(runnerStatusSignal, { status: 'idle' });
      const { runId } = await handle.describe();
      return runId !== firstRunId ? runId : undefined;
    }, 20_000, 'a continued run');

    const api = testApp(env.client, env.w.taskQueue);
    const response = await api.call('POST', '/api/v1/callbacks/status', { token, body: { status: 'idle', message: 'still here' } });
    expect(response.status).toBe(202);
    // Delivered to a continued run: the one seen above, or a later one if idle reports that were
    // still on their way made it continue as new again.
    const later = await signalsOfLaterRuns(env.client, runnerWorkflowId(name), firstRunId);
    expect(later.map(({ name: n, input }) => ({ name: n, input }))).toContainEqual({ name: 'runnerStatus', input: { status: 'idle', message: 'still here' } });
    expect(await signalsOf(env.client, runnerWorkflowId(name), firstRunId)).not.toContainEqual({ name: 'runnerStatus', input: { status: 'idle', message: 'still here' } });

    await handle.signal(forceDeleteSignal, { reason: 'test done' });
    await env.client.workflow.getHandle(runnerWorkflowId(name)).result();
    const error = await expectError(await api.call('POST', '/api/v1/callbacks/status', { token, body: { status: 'idle' } }), 403, 'forbidden');
    expect(error.message).toMatch(/has been deleted/);
  });
});
