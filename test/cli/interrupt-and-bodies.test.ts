/**
 * The CLI against stub HTTP servers: one that answers 2xx with something other
 * than JSON (a proxy's page), one that never answers, for Ctrl-C while a
 * request is in flight, and ones that fail for a while or answer with an API
 * hint the CLI says in its own terms.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../cli/api-client';
import { runCli } from '../../cli/run';
import { watchRunner } from '../../cli/watch';
import type { InstanceState } from '../../workflows/messages';

const BIN = resolve(import.meta.dirname, '../../bin/runnerflow.js');

interface Stub {
  url: string;
  /** Requests seen so far, each with whether its connection was closed by the client. */
  requests: { path: string; closed: boolean }[];
  server: Server;
}

const stubs: Stub[] = [];

async function stubServer(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Stub> {
  const requests: Stub['requests'] = [];
  const server = createServer((req, res) => {
    const seen = { path: req.url ?? '', closed: false };
    requests.push(seen);
    res.on('close', () => (seen.closed = true));
    handle(req, res);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const stub = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, server };
  stubs.push(stub);
  return stub;
}

afterEach(async () => {
  for (const stub of stubs.splice(0)) {
    stub.server.closeAllConnections();
    await new Promise((done) => stub.server.close(done));
  }
});

/** Fails the test instead of hanging it when the CLI does not notice Ctrl-C. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(`${what} still running after ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 10));
  }
}

function captured(env: Record<string, string>, signal?: AbortSignal) {
  const out = { stdout: [] as string[], stderr: [] as string[] };
  const io = { stdout: (t: string) => out.stdout.push(t), stderr: (t: string) => out.stderr.push(t), env, ...(signal ? { signal } : {}) };
  return { out, io };
}

describe('a 2xx answer that is not JSON', () => {
  it.each([
    ['an HTML page', 'text/html; charset=utf-8', '<html><body>Sign in to continue</body></html>', ' (text/html; charset=utf-8)'],
    ['an empty body', 'application/json', '', ' (empty)'],
  ])('fails with a clear error for %s', async (_what, type, body, shown) => {
    const stub = await stubServer((_req, res) => res.writeHead(200, { 'content-type': type }).end(body));
    const { out, io } = captured({ RUNNERFLOW_URL: `${stub.url}/`, RUNNERFLOW_ADMIN_TOKEN: 't' });
    expect(await runCli(['pool', 'list'], io)).toBe(1);
    expect(out.stdout).toEqual([]);
    expect(out.stderr).toEqual([
      `error: the server at ${stub.url} answered 200 with a non-JSON body${shown} to GET /api/v1/pools; is --url (RUNNERFLOW_URL) the runnerflow API?`,
    ]);
  });

  it('still reports the API error message of a non-2xx answer', async () => {
    const stub = await stubServer((_req, res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"no pool x"}}'));
    const { out, io } = captured({ RUNNERFLOW_URL: stub.url });
    expect(await runCli(['pool', 'show', 'x'], io)).toBe(1);
    expect(out.stderr).toEqual(['error: no pool x']);
  });
});

describe('Ctrl-C', () => {
  it('cancels a request in flight and exits 130 at once', async () => {
    const stub = await stubServer(() => undefined);
    const interrupt = new AbortController();
    const { out, io } = captured({ RUNNERFLOW_URL: stub.url }, interrupt.signal);
    const started = Date.now();
    const code = runCli(['runner', 'list'], io);
    await until(() => stub.requests.length === 1, 'the request');
    interrupt.abort();
    expect(await within(code, 2_000, 'runner list')).toBe(130);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(out.stderr).toEqual(['error: interrupted']);
    await until(() => stub.requests[0]!.closed, 'the request to be cancelled');
  });

  it('makes no request once already given', async () => {
    const stub = await stubServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"pools":[]}'));
    const interrupt = new AbortController();
    interrupt.abort();
    const api = new ApiClient({ url: stub.url, signal: interrupt.signal });
    await expect(api.get('/api/v1/pools')).rejects.toMatchObject({ exitCode: 130, message: 'interrupted' });
    expect(stub.requests).toEqual([]);
  });

  it('given while a watch request is answered, ends the watch without waiting out the interval', async () => {
    const interrupt = new AbortController();
    const state = { name: 'r1', pool: 'p', provider: 'fake', status: 'running', runnerStatus: 'idle', transitions: [] } as unknown as InstanceState;
    // The answer is already on its way when Ctrl-C comes: the abort event has fired before the wait begins.
    const api = {
      get: async () => {
        interrupt.abort();
        return state;
      },
    } as unknown as ApiClient;
    const lines: string[] = [];
    const end = watchRunner({ api, name: 'r1', intervalMs: 60_000, json: true, out: (t) => lines.push(t), signal: interrupt.signal });
    expect(await within(end, 1_000, 'runner watch')).toBe('aborted');
    expect(lines).toEqual([JSON.stringify({ runner: 'r1', runnerStatus: 'idle' })]);
  });

  it('stops the runnerflow process waiting on a slow API with exit code 130', async () => {
    const stub = await stubServer(() => undefined);
    const child = spawn(process.execPath, [BIN, 'pool', 'list'], { env: { PATH: process.env.PATH ?? '', RUNNERFLOW_URL: stub.url, RUNNERFLOW_ADMIN_TOKEN: 't' } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (exitCode) => done(exitCode)));
    try {
      await until(() => stub.requests.length === 1, 'the CLI request');
      child.kill('SIGINT');
      expect(await within(exited, 10_000, 'runnerflow pool list')).toBe(130);
      // Said only when the command itself ended: exiting on the fallback timer after Ctrl-C prints nothing.
      expect(stderr).toBe('error: interrupted\n');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

const runnerState = (status: string, transitions: { from: string; to: string }[] = []) =>
  JSON.stringify({ name: 'r1', pool: 'p', provider: 'fake', status, runnerStatus: 'idle', transitions: transitions.map((t) => ({ ...t, at: '2030-01-01T00:00:00.000Z' })) });

describe('runner watch while the API fails for a while', () => {
  it('asks again after a 5xx answer and a dropped connection, saying so on stderr, and follows the runner until it is deleted', async () => {
    const answers: ((res: ServerResponse) => void)[] = [
      (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(runnerState('running', [{ from: 'creating', to: 'running' }])),
      (res) => res.writeHead(504, { 'content-type': 'application/json' }).end('{"error":{"code":"temporal_timeout","message":"Temporal did not answer in time"}}'),
      (res) => res.destroy(),
      (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(runnerState('deleted', [{ from: 'creating', to: 'running' }, { from: 'running', to: 'deleted' }])),
    ];
    const stub = await stubServer((_req, res) => answers.shift()!(res));
    const { out, io } = captured({ RUNNERFLOW_URL: stub.url, RUNNERFLOW_ADMIN_TOKEN: 't' });
    expect(await within(runCli(['runner', 'watch', 'r1', '--interval', '0.1'], io), 10_000, 'runner watch')).toBe(0);
    expect(out.stdout.filter((l) => l.includes(' -> '))).toEqual(['2030-01-01T00:00:00.000Z  creating -> running', '2030-01-01T00:00:00.000Z  running -> deleted']);
    expect(out.stdout.at(-1)).toBe('runner r1 is deleted');
    expect(out.stderr).toEqual([
      'watch: Temporal did not answer in time; asking again in 1s (Ctrl-C stops)',
      expect.stringMatching(/^watch: cannot reach the runnerflow API at http:\/\/127\.0\.0\.1:\d+: .*; asking again in 2s \(Ctrl-C stops\)$/),
      expect.stringMatching(/^watch: the API answers again \(after \d+s\)$/),
    ]);
  });

  it('stops at once on Ctrl-C while it waits to ask again, with exit code 130', async () => {
    const stub = await stubServer((_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"temporal_unavailable","message":"Temporal is not reachable"}}'));
    const interrupt = new AbortController();
    const { out, io } = captured({ RUNNERFLOW_URL: stub.url }, interrupt.signal);
    const code = runCli(['runner', 'watch', 'r1'], io);
    await until(() => out.stderr.length === 1, 'the first notice');
    interrupt.abort();
    expect(await within(code, 1_000, 'runner watch')).toBe(130);
    expect(out.stderr).toEqual(['watch: Temporal is not reachable; asking again in 1s (Ctrl-C stops)', 'error: interrupted']);
  });
});

describe('hints in the terms of the command line', () => {
  it('names --bypass-busy for a busy runner and --token for a missing token', async () => {
    const stub = await stubServer((req, res) => {
      if (!req.headers.authorization) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"unauthenticated","message":"missing bearer token: send \\"Authorization: Bearer <admin token>\\""}}');
        return;
      }
      const message = 'runner r1 is running a job on GitHub: cancel the job in GitHub first (the runner then leaves on its own), or add bypassBusy=true to delete it anyway';
      res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'runner_busy', message } }));
    });
    const busy = captured({ RUNNERFLOW_URL: stub.url, RUNNERFLOW_ADMIN_TOKEN: 't' });
    expect(await runCli(['runner', 'delete', 'r1', '--force'], busy.io)).toBe(1);
    expect(busy.out.stderr).toEqual([
      'error: runner r1 is running a job on GitHub: cancel the job in GitHub first (the runner then leaves on its own), or add --bypass-busy to delete it anyway',
    ]);
    const anonymous = captured({ RUNNERFLOW_URL: stub.url });
    expect(await runCli(['pool', 'list'], anonymous.io)).toBe(1);
    expect(anonymous.out.stderr).toEqual(['error: the API needs the admin token: pass --token TOKEN or set RUNNERFLOW_ADMIN_TOKEN']);
  });
});
