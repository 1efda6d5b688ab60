/**
 * A worker that stops is the failure operators meet most: the API must say so
 * instead of answering 500. The server fails a query at once only once it has seen
 * the task queue's pollers go (about ten seconds after the last one); before that
 * the query waits out its deadline. Both are answered with a reason, never a 500.
 */
import { describe, expect, it } from 'vitest';
import { eventually, uniqueName } from '../support/temporal';
import { expectError, useWorkerAndApi, validPool } from './support';

// The server answers "no poller" a second before the caller's deadline: the deadline leaves it room.
const env = useWorkerAndApi({ limits: { queryTimeoutMs: 3_000 } });

describe('a worker that has stopped', () => {
  it('makes a pool read answer 503 no_worker naming the task queue, after 504s while the server has not noticed', async () => {
    const { api, worker } = env;
    const name = uniqueName('no-worker').toLowerCase().slice(0, 60);
    expect((await api.call('POST', '/api/v1/pools', { body: validPool(name) })).status).toBe(201);
    await eventually(async () => (await api.call('GET', `/api/v1/pools/${name}`)).status === 200, 20_000, 'the pool answering');

    await worker.stop();
    const seen: number[] = [];
    const response = await eventually(async () => {
      const answer = await api.call('GET', `/api/v1/pools/${name}`);
      seen.push(answer.status);
      return answer.status === 503 ? answer : undefined;
    }, 60_000, 'the API answering 503');
    const error = await expectError(response, 503, 'no_worker');
    expect(error.message).toBe(`no runnerflow worker polls task queue "${worker.taskQueue}": start one (npm run worker) with this task queue`);
    // Until then, a timeout with both possible causes, never a 500.
    expect(seen.filter((status) => status !== 503 && status !== 504)).toEqual([]);
  });
});
