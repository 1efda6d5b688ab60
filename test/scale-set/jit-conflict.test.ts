/**
 * A scale-set JIT config whose name conflicts (409) is minted again after the
 * leftover runner is cleared, but only a few times: a conflict that does not
 * clear is handed back to the caller, whose retries have a backoff and an end.
 * The Actions service here is a few lines of HTTP that keep the conflict going.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ActionsServiceClient } from '../../github/actions/client';
import { ActionsServiceError } from '../../github/actions/port';

interface Conflict {
  /** Generate calls answered 409 before one succeeds; a bound keeps an unbounded client from looping forever. */
  conflicts: number;
  /** Whether the agents listing finds the leftover runner. */
  listed: boolean;
}

let server: Server;
let url: string;
let conflict: Conflict = { conflicts: 0, listed: false };
let calls: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const answer = (status: number, body?: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body === undefined ? '' : JSON.stringify(body));
    };
    req.resume();
    req.on('end', () => {
      if (path === '/actions/runner-registration') return answer(200, { url: `${url}/svc`, token: 'admin-token' });
      if (req.method === 'POST' && path === '/svc/_apis/runtime/runnerscalesets/7/generatejitconfig') {
        calls.push('generate');
        if (calls.filter((c) => c === 'generate').length <= conflict.conflicts) {
          return answer(409, { message: 'An agent with the name r1 already exists.', typeName: 'AgentExistsException' });
        }
        return answer(200, { runner: { id: 42, name: 'r1', runnerScaleSetId: 7 }, encodedJITConfig: 'jit' });
      }
      if (req.method === 'GET' && path === '/svc/_apis/distributedtask/pools/0/agents') {
        calls.push('find');
        return answer(200, conflict.listed ? { count: 1, value: [{ id: 41, name: 'r1', runnerScaleSetId: 7 }] } : { count: 0, value: [] });
      }
      if (req.method === 'DELETE' && path === '/svc/_apis/distributedtask/pools/0/agents/41') {
        calls.push('remove');
        return answer(204);
      }
      answer(404, { message: `no route ${req.method} ${path}` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  calls = [];
});

const client = () => new ActionsServiceClient({ apiUrl: url, scope: { kind: 'org', org: 'acme' }, registrationToken: async () => 'registration-token' });

describe('a conflicting scale-set JIT config', () => {
  it('is minted once the leftover runner is removed', async () => {
    conflict = { conflicts: 1, listed: true };
    expect(await client().generateJitConfig(7, 'r1', '_work')).toEqual({ runnerId: 42, encodedJitConfig: 'jit' });
    expect(calls).toEqual(['generate', 'find', 'remove', 'generate']);
  });

  it.each([
    ['the leftover runner cannot be found', false, ['generate', 'find', 'generate', 'find', 'generate']],
    ['its removal has not taken effect', true, ['generate', 'find', 'remove', 'generate', 'find', 'remove', 'generate']],
  ])('gives up after three tries when %s, with a retryable error naming the runner', async (_when, listed, expected) => {
    conflict = { conflicts: 10, listed };
    const err = await client()
      .generateJitConfig(7, 'r1', '_work')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActionsServiceError);
    expect(err).toMatchObject({ status: 409, retryable: true });
    expect((err as Error).message).toContain('runner r1');
    expect(calls).toEqual(expected);
  });

  it('is not cleared by an attempt given up on: the leftover may be the registration its successor minted', async () => {
    conflict = { conflicts: 1, listed: true };
    const gaveUp = new AbortController();
    gaveUp.abort(new Error('attempt cut off'));
    const err = await client()
      .generateJitConfig(7, 'r1', '_work', gaveUp.signal)
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('attempt cut off');
    expect(calls).toEqual(['generate']);
  });
});
