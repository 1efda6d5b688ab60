import { Agent, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { HTTP_FRONT_SOURCE, parseListen, startHttpServer, type HttpServer } from '../../api/node-server';
import { eventually } from '../support/temporal';
import { readJson } from '../../api/http/body';
import { HttpError } from '../../api/http/errors';

let server: HttpServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function rawPost(url: string, headers: Record<string, string>, chunks: string[]): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('parseListen', () => {
  it('reads host:port, [v6]:port, :port and port', () => {
    expect(parseListen('127.0.0.1:8080')).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(parseListen('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(parseListen(':0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseListen('8081')).toEqual({ host: '127.0.0.1', port: 8081 });
    expect(() => parseListen('localhost')).toThrow(/host:port/);
    expect(() => parseListen('127.0.0.1:99999')).toThrow(/host:port/);
  });
});

describe('startHttpServer', () => {
  it('hands the app a fetch Request with the streamed body and writes its Response back', async () => {
    server = await startHttpServer(async (request) => {
      const text = await request.text();
      return new Response(JSON.stringify({ method: request.method, path: new URL(request.url).pathname, query: new URL(request.url).search, text }), {
        status: 201,
        headers: { 'content-type': 'application/json', 'x-extra': 'yes' },
      });
    }, '127.0.0.1:0');
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const result = await rawPost(`${server.url}/echo?a=1`, { 'transfer-encoding': 'chunked' }, ['hello ', 'streamed ', 'world']);
    expect(result.status).toBe(201);
    expect(result.headers['x-extra']).toBe('yes');
    expect(JSON.parse(result.body)).toEqual({ method: 'POST', path: '/echo', query: '?a=1', text: 'hello streamed world' });
  });

  it('streams a response body as the app produces it', async () => {
    server = await startHttpServer(async () => {
      const encoder = new TextEncoder();
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (n === 3) return controller.close();
          await new Promise((r) => setTimeout(r, 10));
          controller.enqueue(encoder.encode(`part${n++};`));
        },
      });
      return new Response(body, { status: 200 });
    }, '127.0.0.1:0');
    const response = await fetch(`${server.url}/stream`);
    expect(await response.text()).toBe('part0;part1;part2;');
  });

  it('never hands the app a request whose client left before its body was whole', async () => {
    const seen: string[] = [];
    server = await startHttpServer(async (request) => {
      const path = new URL(request.url).pathname;
      seen.push(path);
      return Response.json({ path, bytes: (await request.arrayBuffer()).byteLength });
    }, '127.0.0.1:0');
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${server!.url}/abandoned`, { method: 'POST', headers: { 'content-length': '1000' } });
      req.on('error', () => resolve());
      req.write('x'.repeat(500), () => setTimeout(() => req.destroy(), 100));
    });
    // A small body sent in parts arrives whole, in one piece with its head.
    const whole = await rawPost(`${server.url}/whole`, { 'transfer-encoding': 'chunked' }, ['a'.repeat(1000), 'b'.repeat(1000), 'c'.repeat(1000)]);
    expect(JSON.parse(whole.body)).toEqual({ path: '/whole', bytes: 3000 });
    expect(seen).toEqual(['/whole']);
  });

  it('writes a body larger than the socket takes at once, waiting for it to drain', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(97);
    server = await startHttpServer(async () => {
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (n++ === 128) return controller.close();
          controller.enqueue(chunk);
        },
      });
      return new Response(body, { status: 200 });
    }, '127.0.0.1:0');
    const received = await new Promise<number>((resolve, reject) => {
      httpRequest(`${server!.url}/big`, (res) => {
        let bytes = 0;
        // A slow reader: the server must wait for the socket instead of buffering everything.
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          res.pause();
          setTimeout(() => res.resume(), 1);
        });
        res.on('end', () => resolve(bytes));
        res.on('error', reject);
      }).end();
    });
    expect(received).toBe(128 * 64 * 1024);
  });

  it('stops reading the app stream when the client goes away mid-answer', async () => {
    let cancelled: unknown;
    const failures: string[] = [];
    let produced = 0;
    server = await startHttpServer(
      async () => {
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            produced += 1;
            await new Promise((r) => setTimeout(r, 5));
            controller.enqueue(new Uint8Array(16 * 1024));
          },
          cancel(reason) {
            cancelled = reason ?? 'cancelled';
          },
        });
        return new Response(body, { status: 200 });
      },
      '127.0.0.1:0',
      { onError: (message) => failures.push(message) },
    );
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${server!.url}/endless`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end();
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(cancelled).toBeDefined();
    const after = produced;
    await new Promise((r) => setTimeout(r, 100));
    expect(produced).toBe(after);
    expect(failures).toEqual(['http response failed']);
  });

  it('refuses a declared body over the server cap with 413 before the app runs', async () => {
    let called = false;
    server = await startHttpServer(
      async () => {
        called = true;
        return new Response('ok');
      },
      '127.0.0.1:0',
      { maxBodyBytes: 100 },
    );
    const result = await rawPost(`${server.url}/x`, { 'content-length': '1000' }, ['x'.repeat(1000)]);
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body)).toEqual({ error: { code: 'payload_too_large', message: expect.stringContaining('100 bytes') } });
    expect(called).toBe(false);
  });

  it('survives a route that refuses a declared body unread: the rest of the body is discarded, not fed to a closed stream', async () => {
    const limit = 1024 * 1024;
    server = await startHttpServer(async (request) => {
      try {
        return Response.json(await readJson(request, limit));
      } catch (err) {
        if (err instanceof HttpError) return Response.json({ code: err.code }, { status: err.status });
        throw err;
      }
    }, '127.0.0.1:0');
    const url = server.url;
    // Content-Length over the route's limit and the whole body sent at once, as fetch does.
    for (let i = 0; i < 3; i++) {
      const refused = await fetch(`${url}/pools`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(limit + 50_000) });
      expect(refused.status).toBe(413);
      expect(await refused.json()).toEqual({ code: 'payload_too_large' });
    }
    // Give the discarded bytes time to arrive; a crash here would end the test process.
    await new Promise((r) => setTimeout(r, 300));
    const ok = await fetch(`${url}/pools`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"a"}' });
    expect(await ok.json()).toEqual({ name: 'a' });
  });

  it('closes a kept-alive connection whose body the app answered without reading, so the next request is answered', async () => {
    server = await startHttpServer(async (request) => {
      if (new URL(request.url).pathname === '/read') return Response.json({ read: (await request.text()).length });
      return Response.json({ error: 'no' }, { status: 401 });
    }, '127.0.0.1:0');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (path: string, body: string) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const req = httpRequest(`${server!.url}${path}`, { method: 'POST', agent, headers: { 'content-length': String(body.length) } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.setTimeout(3_000, () => req.destroy(new Error('no answer on the kept-alive connection')));
        req.end(body);
      });
    // Larger than the kernel's socket buffers take: the server cannot have received it all by the time it answers.
    const unread = 'x'.repeat(16 * 1024 * 1024);
    try {
      expect(await post('/refuse', unread)).toEqual({ status: 401, connection: 'close' });
      expect((await post('/refuse', unread)).status).toBe(401);
      // A body read to its end keeps the connection for the next request.
      expect(await post('/read', 'x'.repeat(300_000))).toEqual({ status: 200, connection: 'keep-alive' });
      expect(await post('/read', '{}')).toEqual({ status: 200, connection: 'keep-alive' });
    } finally {
      agent.destroy();
    }
  });

  it('answers 500 in the error shape when the app itself throws', async () => {
    const errors: string[] = [];
    server = await startHttpServer(
      async () => {
        throw new Error('app bug with detail');
      },
      '127.0.0.1:0',
      { onError: (_m, meta) => errors.push(String(meta.error)) },
    );
    const response = await fetch(`${server.url}/boom`);
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ error: { code: 'internal', message: 'internal server error' } });
    expect(text).not.toContain('detail');
    expect(errors).toEqual(['app bug with detail']);
  });

  it('answers 500 when Node will not write the head the app made, and serves the next request', async () => {
    const errors: string[] = [];
    server = await startHttpServer(async (request) => new Response('hi', { headers: { 'x-echo': new URL(request.url).searchParams.get('v') ?? 'ok' } }), '127.0.0.1:0', {
      onError: (message, meta) => errors.push(`${message}: ${String(meta.error)}`),
    });
    // fetch's Headers take a control character that node:http refuses to write.
    const refused = await fetch(`${server.url}/?v=${encodeURIComponent('a\u0001b')}`);
    expect(refused.status).toBe(500);
    expect(await refused.json()).toEqual({ error: { code: 'internal', message: 'internal server error' } });
    expect(errors).toEqual([expect.stringMatching(/^http server error: response not written: Invalid character in header content/)]);
    const next = await fetch(`${server.url}/?v=fine`);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-echo')).toBe('fine');
  });
});

describe('a front thread that stops on its own', () => {
  // The real front, made to fail the way an uncaught error would when asked for /stop-front.
  const failingFront = `${HTTP_FRONT_SOURCE}
server.prependListener('request', (req) => { if (req.url === '/stop-front') setImmediate(() => { throw new Error('the front failed'); }); });`;

  it('is started again on the same address, and requests are answered as before', async () => {
    const errors: string[] = [];
    server = await startHttpServer(async (request) => new Response(new URL(request.url).pathname), '127.0.0.1:0', {
      frontSource: failingFront,
      frontRestartMs: 50,
      onError: (message) => errors.push(message),
    });
    const url = server.url;
    expect(await (await fetch(`${url}/before`)).text()).toBe('/before');
    await expect(fetch(`${url}/stop-front`)).rejects.toThrow();
    await eventually(() => errors.includes('http front stopped; starting a new one'), 5_000, 'the stop noticed');
    await eventually(async () => (await fetch(`${url}/after`).then((r) => r.text()).catch(() => '')) === '/after', 10_000, 'a new front on the same address');
    expect(server.url).toBe(url);
  });

  it('is not started again once the server is closing', async () => {
    const errors: string[] = [];
    const closing = await startHttpServer(async () => new Response('ok'), '127.0.0.1:0', { frontSource: failingFront, frontRestartMs: 300, onError: (message) => errors.push(message) });
    await expect(fetch(`${closing.url}/stop-front`)).rejects.toThrow();
    await eventually(() => errors.includes('http front stopped; starting a new one'), 5_000, 'the stop noticed');
    await closing.close();
    await new Promise((resolve) => setTimeout(resolve, 600));
    await expect(fetch(`${closing.url}/`)).rejects.toThrow();
  });
});

/**
 * libuv as Node 20 ships it accepts one connection per turn of the event loop, so a server on a
 * thread that is busy with other work leaves new connections queued in the kernel for seconds
 * (GitHub gives up on a delivery after 10). The front thread accepts and reads requests whatever
 * the app's thread is doing: proven here by holding the app's thread still while a client opens
 * connections that ask `Expect: 100-continue`, which only a server that has accepted and parsed
 * the request can answer.
 */
describe('the front thread', () => {
  const CONNECTIONS = 100;
  // A client in a process of its own: this process's thread is the one held still.
  const CLIENT = `
    const net = require('node:net');
    const port = Number(process.argv[1]);
    let continued = 0, answered = 0, lastContinueAt = 0;
    process.stdout.write('ready\\n');
    process.stdin.once('data', () => {
      for (let i = 0; i < ${CONNECTIONS}; i++) {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.write('POST /probe HTTP/1.1\\r\\nHost: probe\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\nExpect: 100-continue\\r\\nConnection: close\\r\\n\\r\\n');
        });
        let seen = '';
        socket.on('data', (chunk) => {
          const before = seen;
          seen += chunk.toString();
          if (!before.includes('100 Continue') && seen.includes('100 Continue')) {
            continued++;
            lastContinueAt = Date.now();
            socket.write('{}');
          }
          if (!before.includes(' 200 ') && seen.includes(' 200 ') && ++answered === ${CONNECTIONS}) finish();
        });
        socket.on('error', () => undefined);
      }
    });
    let done = false;
    function finish() {
      if (done) return;
      done = true;
      process.stdout.write(JSON.stringify({ continued, answered, lastContinueAt }) + '\\n');
      process.exit(0);
    }
    setTimeout(finish, 30000).unref();
  `;

  it('accepts and reads requests while the app thread is busy', async () => {
    const { spawn } = await import('node:child_process');
    let requests = 0;
    server = await startHttpServer(async (request) => {
      requests += 1;
      return Response.json(await request.json());
    }, '127.0.0.1:0');
    const child = spawn(process.execPath, ['-e', CLIENT, new URL(server.url).port], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    let nextLine: (() => void) | undefined;
    child.stdout.setEncoding('utf8');
    let buffered = '';
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      lines.push(...parts);
      nextLine?.();
    });
    const line = async (n: number): Promise<string> => {
      while (lines.length < n) await new Promise<void>((resolve) => (nextLine = resolve));
      return lines[n - 1]!;
    };
    expect(await line(1)).toBe('ready');

    child.stdin.write('go\n');
    // Hold this thread still (without spinning a core) while the client connects.
    const heldMs = 3_000;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, heldMs);
    const releasedAt = Date.now();

    const result = JSON.parse(await line(2)) as { continued: number; answered: number; lastContinueAt: number };
    // Every connection was accepted and its headers read while the app's thread could do nothing.
    expect(result.continued).toBe(CONNECTIONS);
    expect(result.lastContinueAt).toBeLessThan(releasedAt);
    // And each request then reached the app and was answered, once.
    expect(result.answered).toBe(CONNECTIONS);
    expect(requests).toBe(CONNECTIONS);
  }, 60_000);
});
