/**
 * Serves a fetch-style app over node:http, from a thread of its own (see HTTP_FRONT_SOURCE): requests
 * and responses are streamed, not buffered, and a body whose Content-Length exceeds the
 * server-wide cap is refused before the app sees it (the app caps what it reads per route too).
 */
import { Worker, type TransferListItem } from 'node:worker_threads';
import { parseListen, type ListenAddress } from '../config/schema';
import type { App } from './app';
import { payloadTooLarge } from './http/body';
import { HttpError } from './http/errors';
import { errorResponse } from './http/responses';

export { parseListen, type ListenAddress };

const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another process listens on that port)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no interface of this machine has that address',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve',
};

/** The server could not bind its address: a setup problem to report in one line, not a crash. */
export class ListenError extends Error {
  readonly code: string | undefined;

  constructor(host: string, port: number, cause: NodeJS.ErrnoException) {
    const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const why = (cause.code && LISTEN_FAILURES[cause.code]) ?? cause.message;
    super(`cannot listen on ${where}: ${why}${cause.code ? ` (${cause.code})` : ''}`, { cause });
    this.name = 'ListenError';
    this.code = cause.code;
  }
}

export interface HttpServer {
  /** Base URL, e.g. http://127.0.0.1:8080 (with the real port when 0 was asked for). */
  url: string;
  close(): Promise<void>;
}

export interface HttpServerOptions {
  /** Hard cap on any request body, above every route's own limit. */
  maxBodyBytes?: number;
  /** How long close() waits for requests in flight before cutting connections. */
  closeGraceMs?: number;
  onError?: (message: string, meta: Record<string, unknown>) => void;
  /** How soon a front thread that stopped on its own is started again (the pause doubles, to 10 s, while it cannot listen). */
  frontRestartMs?: number;
  /** The front thread's code: the real one unless a test needs a front that fails. */
  frontSource?: string;
}

/**
 * The HTTP front: a thread of its own that accepts connections, parses requests and writes
 * responses, while the app runs on the calling thread. libuv (Node 20) accepts one connection
 * per listening socket per turn of the event loop; on the thread that also runs the worker's
 * activities a turn takes tens of milliseconds under load, so a burst of deliveries, each on a
 * new connection as a proxy without keep-alive sends them, queued by the hundred in the
 * kernel's accept queue and waited seconds for it (bench/README.md). The front's own loop
 * does little else, and accepts as they come.
 *
 * Plain JavaScript: a worker thread does not go through tsx. Messages, by request id:
 * front → app: request (head, with the body's first 64 KiB, or all of it when it came whole),
 * body, body-end, body-error, written, gone;
 * app → front: resume (the app wants more of the body), discard (it stopped reading), head
 * (with the body's first chunk), chunk, end, destroy. A webhook delivery takes three messages
 * where it took about eight: every message wakes the other thread.
 */
export const HTTP_FRONT_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { host, port, maxBodyBytes, bodyBufferBytes } = workerData;
const post = (message, transfer) => parentPort.postMessage(message, transfer);
const live = new Map();
let nextId = 0;

const server = http.createServer((req, res) => {
  const id = ++nextId;
  const x = { req, res, discard: false };
  live.set(id, x);
  const declared = Number(req.headers['content-length']);
  const tooLarge = Number.isFinite(declared) && declared > maxBodyBytes;
  const hasBody = !tooLarge && req.method !== 'GET' && req.method !== 'HEAD';
  const head = { t: 'request', id, method: req.method, url: req.url, rawHeaders: req.rawHeaders, hasBody, tooLarge };
  if (!hasBody) post(head);
  else {
    // A body that arrives whole within bodyBufferBytes goes to the app with its head, in one
    // message (a webhook delivery: one message where a streamed body took three). A larger one
    // is handed over from there on in chunks, with back pressure: at most bodyBufferBytes go to
    // the app before it asks for more (resume).
    let held = [];
    let unasked = 0;
    const postHead = (complete) => {
      const body = new Uint8Array(unasked);
      let offset = 0;
      for (const chunk of held) { body.set(chunk, offset); offset += chunk.byteLength; }
      held = undefined;
      post({ ...head, body, complete }, [body.buffer]);
      if (!complete && unasked >= bodyBufferBytes) req.pause();
    };
    req.on('data', (chunk) => {
      if (x.discard) return;
      unasked += chunk.byteLength;
      if (held) {
        held.push(chunk);
        if (unasked >= bodyBufferBytes) postHead(false);
        return;
      }
      // A copy: the chunk may share its memory with other buffers, which a transfer would take away.
      const copy = new Uint8Array(chunk);
      post({ t: 'body', id, chunk: copy }, [copy.buffer]);
      if (unasked >= bodyBufferBytes) req.pause();
    });
    x.resume = () => { unasked = 0; req.resume(); };
    req.once('end', () => {
      if (x.discard) return;
      if (held) postHead(true);
      else post({ t: 'body-end', id });
    });
    // A request whose body fails before its head was handed over never reaches the app.
    const failed = (message) => { if (!x.discard) { x.discard = true; if (!held) post({ t: 'body-error', id, message }); } };
    req.once('error', (err) => failed(err.message));
    req.once('close', () => { if (!req.complete) failed('the client closed the connection before the request body was complete'); });
  }
  // A response that fails on its socket fails alone; unheard, the error would end the thread.
  res.on('error', () => res.destroy());
  res.once('close', () => {
    live.delete(id);
    if (!res.writableFinished) post({ t: 'gone', id });
  });
});

parentPort.on('message', (m) => {
  if (m.t === 'close') {
    const grace = setTimeout(() => server.closeAllConnections(), m.graceMs);
    server.close(() => { clearTimeout(grace); post({ t: 'closed' }); });
    server.closeIdleConnections();
    return;
  }
  const x = live.get(m.id);
  if (!x || x.failed) return;
  const { req, res } = x;
  try {
    switch (m.t) {
      case 'resume': if (x.resume) x.resume(); break;
      // Drained, not destroyed: the response still goes out on this connection.
      case 'discard': x.discard = true; req.resume(); break;
      case 'head':
        // A body not yet received whole when the answer goes: closing the connection spares
        // reading the rest of an upload nobody wants, and no next request waits behind it.
        if (!req.complete) m.headers.connection = 'close';
        res.writeHead(m.status, m.headers);
        if (m.end) res.end(m.bytes);
        else if (m.bytes) write(m.id, res, m.bytes, m.ack);
        break;
      case 'chunk': write(m.id, res, m.bytes, m.ack); break;
      case 'end': res.end(); break;
      case 'destroy': res.destroy(); break;
    }
  } catch (err) {
    // What Node will not write (a header value with a control character, which fetch's Headers
    // allow) fails this one answer, as a throwing app does, not the thread every request needs.
    x.failed = true;
    post({ t: 'error', message: 'response not written: ' + err.message });
    if (res.headersSent) return res.destroy();
    res.writeHead(500, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
    res.end(JSON.stringify({ error: { code: 'internal', message: 'internal server error' } }));
  }
});

// ack: the app waits to hear that these bytes went out (or were taken by the socket's buffer).
function write(id, res, bytes, ack) {
  if (res.write(bytes)) { if (ack) post({ t: 'written', id }); }
  else if (ack) res.once('drain', () => post({ t: 'written', id }));
}

server.once('error', (err) => post({ t: 'listen-error', code: err.code, message: err.message }));
server.listen(port, host, () => {
  server.removeAllListeners('error');
  server.on('error', (err) => post({ t: 'error', message: err.message }));
  const a = server.address();
  post({ t: 'listening', address: a.address, family: a.family, port: a.port });
});
`;

type FromFront =
  | { t: 'listening'; address: string; family: string; port: number }
  | { t: 'listen-error'; code?: string; message: string }
  | { t: 'error'; message: string }
  | { t: 'closed' }
  | {
      t: 'request';
      id: number;
      method: string;
      url: string;
      rawHeaders: string[];
      hasBody: boolean;
      tooLarge: boolean;
      /** The body's first bytes (all of them when `complete`), when it has one. */
      body?: Uint8Array;
      complete?: boolean;
    }
  | { t: 'body'; id: number; chunk: Uint8Array }
  | { t: 'body-end' | 'gone'; id: number }
  | { t: 'written'; id: number }
  | { t: 'body-error'; id: number; message: string };

type ToFront =
  | { t: 'resume' | 'discard' | 'end' | 'destroy'; id: number }
  | { t: 'head'; id: number; status: number; headers: Record<string, string | string[]>; bytes?: Uint8Array; ack?: boolean; end?: boolean }
  | { t: 'chunk'; id: number; bytes: Uint8Array; ack: boolean }
  | { t: 'close'; graceMs: number };

/** One request and its response, as the app's side sees it. */
interface Exchange {
  body?: ReadableStreamDefaultController<Uint8Array>;
  bodyOpen: boolean;
  /** Response bytes sent to the front and not yet written by it to the socket. */
  unwritten: number;
  /** Waiting for the front to write enough of them (or for the client to go away). */
  written?: { resolve: () => void; reject: (err: Error) => void };
  headSent: boolean;
  gone: boolean;
}

/** Body bytes the front hands over before the app asks for more: past this it pauses the socket (back pressure). */
const BODY_BUFFER_BYTES = 64 * 1024;

/**
 * Response bytes the app sends ahead of the socket: past this it waits for the front to write
 * them (back pressure). A small answer goes out whole without waiting for the front's word,
 * which would cost the app's thread a turn of its event loop per response.
 */
const RESPONSE_WINDOW_BYTES = 64 * 1024;

export async function startHttpServer(app: App, listen: string | ListenAddress, options: HttpServerOptions = {}): Promise<HttpServer> {
  const { host, port } = typeof listen === 'string' ? parseListen(listen) : listen;
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const onError = options.onError ?? ((message, meta) => console.error(JSON.stringify({ level: 'error', message, ...meta })));
  let base = '';

  /** The request body as a web stream fed by the front; cancelling it lets the front drop the rest. */
  const bodyStream = (front: Front, id: number, exchange: Exchange, first: Uint8Array | undefined): ReadableStream<Uint8Array> =>
    new ReadableStream<Uint8Array>(
      {
        start(controller) {
          exchange.body = controller;
          if (first && first.byteLength > 0) controller.enqueue(first);
        },
        pull() {
          front.send({ t: 'resume', id });
        },
        cancel() {
          exchange.bodyOpen = false;
          front.send({ t: 'discard', id });
        },
      },
      { highWaterMark: BODY_BUFFER_BYTES, size: (chunk) => chunk.byteLength },
    );

  const writeResponse = async (front: Front, id: number, exchange: Exchange, response: Response): Promise<void> => {
    const headers: Record<string, string | string[]> = {};
    response.headers.forEach((value, key) => {
      if (key !== 'set-cookie') headers[key] = value;
    });
    const cookies = response.headers.getSetCookie();
    if (cookies.length > 0) headers['set-cookie'] = cookies;
    if (!response.body) {
      exchange.headSent = true;
      return front.send({ t: 'head', id, status: response.status, headers, end: true });
    }
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (exchange.gone) throw new Error('the client went away');
        // A copy the front can own: the app's chunk may be a view into memory it keeps.
        const bytes = new Uint8Array(value);
        exchange.unwritten += bytes.byteLength;
        // Only past the window does the app wait for the front's word that the bytes went out.
        const ack = exchange.unwritten > RESPONSE_WINDOW_BYTES;
        // The head goes with the body's first chunk, as node:http itself sends a head with the
        // first write: one message fewer, and every message wakes the other thread.
        if (exchange.headSent) front.send({ t: 'chunk', id, bytes, ack }, [bytes.buffer]);
        else front.send({ t: 'head', id, status: response.status, headers, bytes, ack }, [bytes.buffer]);
        exchange.headSent = true;
        if (ack) {
          await new Promise<void>((resolve, reject) => {
            exchange.written = { resolve, reject };
          });
        }
      }
      if (exchange.headSent) front.send({ t: 'end', id });
      else front.send({ t: 'head', id, status: response.status, headers, end: true });
      exchange.headSent = true;
    } catch (err) {
      // The app's stream stops producing for a client that is gone.
      await reader.cancel(err).catch(() => undefined);
      throw err;
    }
  };

  const serve = async (front: Front, m: Extract<FromFront, { t: 'request' }>, exchange: Exchange): Promise<void> => {
    let response: Response;
    if (m.tooLarge) {
      response = errorResponse(payloadTooLarge(maxBodyBytes));
    } else {
      let request: Request;
      try {
        const headers = new Headers();
        for (let i = 0; i + 1 < m.rawHeaders.length; i += 2) headers.append(m.rawHeaders[i]!, m.rawHeaders[i + 1]!);
        request = new Request(`${base}${m.url || '/'}`, {
          method: m.method,
          headers,
          // A body the front received whole is handed over as bytes, with no stream to feed.
          ...(m.hasBody ? (m.complete ? { body: m.body } : { body: bodyStream(front, m.id, exchange, m.body), duplex: 'half' }) : {}),
        } as RequestInit);
      } catch {
        response = errorResponse(new HttpError(400, 'bad_request', 'the request line or headers are malformed'));
        return writeResponse(front, m.id, exchange, response);
      }
      response = await app(request);
    }
    await writeResponse(front, m.id, exchange, response);
  };

  const settle = (front: Front, id: number, exchange: Exchange): void => {
    if (front.exchanges.get(id) === exchange) front.exchanges.delete(id);
    // A body the app left unread: the front stops handing it over.
    if (exchange.bodyOpen) front.send({ t: 'discard', id });
  };

  const onMessage = (front: Front, m: FromFront): void => {
    const { exchanges } = front;
    switch (m.t) {
      case 'request': {
        const exchange: Exchange = { bodyOpen: m.hasBody && !m.complete, unwritten: 0, headSent: false, gone: false };
        exchanges.set(m.id, exchange);
        void serve(front, m, exchange)
          .catch((err: unknown) => {
            onError('http response failed', { path: m.url, error: (err as Error).message });
            if (exchange.gone) return;
            // Once headers are out, the status cannot change: cut the response short instead.
            if (exchange.headSent) return front.send({ t: 'destroy', id: m.id });
            const body = new TextEncoder().encode(JSON.stringify({ error: { code: 'internal', message: 'internal server error' } }));
            front.send({ t: 'head', id: m.id, status: 500, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes: body, end: true }, [body.buffer]);
          })
          .finally(() => settle(front, m.id, exchange));
        return;
      }
      case 'body': {
        const exchange = exchanges.get(m.id);
        if (!exchange?.body || !exchange.bodyOpen) return;
        exchange.body.enqueue(m.chunk);
        return;
      }
      case 'body-end': {
        const exchange = exchanges.get(m.id);
        if (!exchange?.body || !exchange.bodyOpen) return;
        exchange.bodyOpen = false;
        exchange.body.close();
        return;
      }
      case 'body-error': {
        const exchange = exchanges.get(m.id);
        if (!exchange?.body || !exchange.bodyOpen) return;
        exchange.bodyOpen = false;
        exchange.body.error(new Error(m.message));
        return;
      }
      case 'written': {
        // For the chunk the app waits on, the last it sent: the front writes in order, so every byte before it is out too.
        const exchange = exchanges.get(m.id);
        if (!exchange) return;
        exchange.unwritten = 0;
        exchange.written?.resolve();
        exchange.written = undefined;
        return;
      }
      case 'gone': {
        const exchange = exchanges.get(m.id);
        if (!exchange) return;
        goneExchange(exchange, 'the client went away');
        return;
      }
      case 'error':
        onError('http server error', { error: m.message });
        return;
      case 'closed':
        front.closed?.();
        return;
      default:
        return;
    }
  };

  /**
   * Starts a front thread and waits until it listens. Each front numbers its requests from 1,
   * so an exchange answers only through the front it came from: a response still being made
   * when its front stopped goes nowhere, never to another client's request of the same number.
   */
  const startFront = async (at: { host: string; port: number }): Promise<Front> => {
    const worker = new Worker(options.frontSource ?? HTTP_FRONT_SOURCE, { eval: true, workerData: { host: at.host, port: at.port, maxBodyBytes, bodyBufferBytes: BODY_BUFFER_BYTES } });
    const front: Front = {
      worker,
      exchanges: new Map(),
      exited: false,
      send: (message, transfer) => {
        if (!front.exited) worker.postMessage(message, transfer);
      },
    };
    worker.on('message', (m: FromFront) => onMessage(front, m));
    worker.once('exit', () => {
      front.exited = true;
      // The requests it held are gone with their connections: their streams and waits end here.
      for (const exchange of front.exchanges.values()) goneExchange(exchange, 'the HTTP front stopped');
      front.exchanges.clear();
      front.closed?.();
    });
    const listening = await new Promise<Extract<FromFront, { t: 'listening' }>>((resolve, reject) => {
      const first = (m: FromFront) => {
        if (m.t === 'listening') resolve(m);
        else if (m.t === 'listen-error') reject(new ListenError(at.host, at.port, Object.assign(new Error(m.message), { code: m.code })));
        else return;
        worker.off('message', first);
        worker.off('error', crashed);
      };
      const crashed = (err: Error) => reject(err);
      worker.on('message', first);
      worker.once('error', crashed);
      // A thread that ends without an error before it listens would otherwise leave this waiting for good.
      worker.once('exit', (code) => reject(new Error(`the HTTP front stopped before it listened (exit code ${code})`)));
    }).catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    });
    worker.on('error', (err) => onError('http front failed', { error: err.message }));
    front.address = listening;
    return front;
  };

  let front = await startFront({ host, port });
  const listening = front.address!;
  const hostPart = listening.family === 'IPv6' ? `[${listening.address}]` : listening.address;
  base = `http://${hostPart}:${listening.port}`;

  /**
   * A front thread that stops on its own (a failure no request handler caught, memory) would
   * leave a process that runs its worker but answers no HTTP at all, and nothing would say so
   * but one log line. A new front takes the same address at once, and again with a growing
   * pause while it cannot; only close() stops that.
   */
  let closing = false;
  let restartTimer: NodeJS.Timeout | undefined;
  const firstRestartMs = options.frontRestartMs ?? 100;
  const watch = (current: Front): void => {
    current.worker.once('exit', (code) => {
      if (closing) return;
      onError('http front stopped; starting a new one', { exitCode: code });
      let pauseMs = firstRestartMs;
      const again = (): void => {
        restartTimer = setTimeout(() => {
          restartTimer = undefined;
          if (closing) return;
          startFront({ host: listening.address, port: listening.port })
            .then(async (started) => {
              if (closing) return started.worker.terminate().then(() => undefined);
              front = started;
              watch(started);
            })
            .catch((err: unknown) => {
              onError('http front could not start again; trying later', { error: (err as Error).message, retryInMs: pauseMs });
              pauseMs = Math.min(pauseMs * 2, MAX_FRONT_RESTART_MS);
              again();
            });
        }, pauseMs);
      };
      again();
    });
  };
  watch(front);

  return {
    url: base,
    close: async () => {
      closing = true;
      if (restartTimer) clearTimeout(restartTimer);
      const current = front;
      if (!current.exited) {
        await new Promise<void>((resolve) => {
          // A front that exits before it says so has nothing left to close either.
          current.closed = resolve;
          current.send({ t: 'close', graceMs: options.closeGraceMs ?? 5_000 });
        });
      }
      await current.worker.terminate();
    },
  };
}

/** One front thread, and the requests it handed over that are not settled yet. */
interface Front {
  worker: Worker;
  exchanges: Map<number, Exchange>;
  send: (message: ToFront, transfer?: TransferListItem[]) => void;
  exited: boolean;
  address?: Extract<FromFront, { t: 'listening' }>;
  closed?: () => void;
}

/** The longest pause between attempts to start a front that keeps failing to listen. */
const MAX_FRONT_RESTART_MS = 10_000;

function goneExchange(exchange: Exchange, reason: string): void {
  exchange.gone = true;
  exchange.written?.reject(new Error(reason));
  exchange.written = undefined;
  if (exchange.bodyOpen && exchange.body) {
    exchange.bodyOpen = false;
    exchange.body.error(new Error(reason));
  }
}
