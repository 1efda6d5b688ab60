/**
 * The workers polling a task queue, as `runnerflow status` and the pool repair read them: from the
 * server's enhanced description of every partition, or, where a server refuses that mode, from
 * the root partition's default description. The refusal is made on the way to the real server
 * (a gRPC interceptor), and the answer that follows is the real server's.
 */
import { InterceptingCall, Metadata, status as grpcStatus, type Interceptor } from '@grpc/grpc-js';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { taskQueuePollers, type Poller } from '../../api/temporal/pollers';
import { eventually, temporalAddress, useTestWorker } from '../support/temporal';

const DESCRIBE_TASK_QUEUE = '/temporal.api.workflowservice.v1.WorkflowService/DescribeTaskQueue';

/** Answers the first `times` DescribeTaskQueue calls with `code` before they reach the server; counts every one. */
function refusingDescribe(code: grpcStatus, times: number): { interceptor: Interceptor; calls: () => number } {
  let calls = 0;
  const interceptor: Interceptor = (options, nextCall) => {
    if (options.method_definition.path !== DESCRIBE_TASK_QUEUE) return new InterceptingCall(nextCall(options));
    calls += 1;
    if (calls > times) return new InterceptingCall(nextCall(options));
    // Never started, so never sent: the call ends with the refusal, as a server's would.
    return new InterceptingCall(nextCall(options), {
      start(_metadata, listener) {
        setImmediate(() => listener.onReceiveStatus({ code, details: `refused for the test (${grpcStatus[code]})`, metadata: new Metadata() }));
      },
      sendMessage() {},
      halfClose() {},
    });
  };
  return { interceptor, calls: () => calls };
}

const env = useTestWorker();
const connections: Connection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
});

async function clientWith(interceptor?: Interceptor): Promise<Client> {
  const connection = await Connection.connect({ address: temporalAddress(), ...(interceptor ? { interceptors: [interceptor] } : {}) });
  connections.push(connection);
  return new Client({ connection });
}

const kinds = (pollers: Poller[]) => [...new Set(pollers.map((p) => p.kind))].sort();

describe('the pollers of a task queue', () => {
  it('are read from the enhanced description, and from the default one where a server refuses that mode', async () => {
    const plain = env.client;
    const enhanced = await eventually(async () => {
      const pollers = await taskQueuePollers(plain, env.w.taskQueue);
      return kinds(pollers).length === 2 ? pollers : undefined;
    }, 20_000, 'both kinds of poller to be seen');
    expect(kinds(enhanced)).toEqual(['activity', 'workflow']);
    const identities = [...new Set(enhanced.map((p) => p.identity))];

    for (const code of [grpcStatus.UNIMPLEMENTED, grpcStatus.INVALID_ARGUMENT]) {
      const refusing = refusingDescribe(code, 1);
      const fallback = await taskQueuePollers(await clientWith(refusing.interceptor), env.w.taskQueue);
      // One refused enhanced call, then one default call per kind of task.
      expect(refusing.calls()).toBe(3);
      expect(kinds(fallback)).toEqual(['activity', 'workflow']);
      expect([...new Set(fallback.map((p) => p.identity))]).toEqual(identities);
      for (const p of fallback) expect(p.lastPollMs).toBeGreaterThan(Date.now() - 10 * 60_000);
    }
  });

  it('are not guessed when the server refuses for another reason: the failure reaches the caller', async () => {
    const refusing = refusingDescribe(grpcStatus.PERMISSION_DENIED, 10);
    await expect(taskQueuePollers(await clientWith(refusing.interceptor), env.w.taskQueue)).rejects.toMatchObject({ code: grpcStatus.PERMISSION_DENIED });
    expect(refusing.calls()).toBe(1);
  });
});
