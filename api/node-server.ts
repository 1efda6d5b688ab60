/**
 * Serves a fetch-style app over node:http: requests and responses are streamed,
 * not buffered, and a body whose Content-Length exceeds the server-wide cap is
 * refused before the app sees it (the app caps what it reads per route too).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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
}

function toRequest(req: IncomingMessage, base: string): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(`${base}${req.url ?? '/'}`, {
    method,
    headers,
    ...(hasBody ? { body: bodyStream(req), duplex: 'half' } : {}),
  } as RequestInit);
}

/** Chunks the app has not read yet, at most: past this the socket is paused (back pressure). */
const BODY_BUFFER_BYTES = 64 * 1024;

/**
 * The request body as a web stream. Not `Readable.toWeb`: a route that refuses a body unread
 * (its Content-Length is over the route's limit) cancels the stream, node:http then discards
 * the rest of the body, and Node's adapter would enqueue those bytes into the closed stream
 * and throw outside any request, ending the process. Here a cancelled body's bytes are
 * dropped as they come.
 */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          if (!open) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.once('end', () => {
          if (!open) return;
          open = false;
          controller.close();
        });
        const fail = (err: Error) => {
          if (!open) return;
          open = false;
          controller.error(err);
        };
        req.once('error', fail);
        // The client went away before the body was whole.
        req.once('close', () => {
          if (!req.complete) fail(new Error('the client closed the connection before the request body was complete'));
        });
      },
      pull() {
        req.resume();
      },
      cancel() {
        open = false;
        // Drained, not destroyed: the response still goes out on this connection.
        req.resume();
      },
    },
    { highWaterMark: BODY_BUFFER_BYTES, size: (chunk) => chunk.byteLength },
  );
}

/**
 * Chunks go from the body's reader straight to the socket, waiting for 'drain'
 * when it is full: measured, `pipeline(Readable.fromWeb(...))` cost more main
 * thread time than the webhook handler itself on a small JSON answer.
 */
async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key !== 'set-cookie') headers[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) throw new Error('the client went away');
      if (!res.write(value)) await waitForDrain(res);
    }
    res.end();
  } catch (err) {
    // The app's stream stops producing for a client that is gone.
    await reader.cancel(err).catch(() => undefined);
    throw err;
  }
}

function waitForDrain(res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('the client went away'));
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

export async function startHttpServer(app: App, listen: string | ListenAddress, options: HttpServerOptions = {}): Promise<HttpServer> {
  const { host, port } = typeof listen === 'string' ? parseListen(listen) : listen;
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const onError = options.onError ?? ((message, meta) => console.error(JSON.stringify({ level: 'error', message, ...meta })));
  let base = '';

  const server = createServer((req, res) => {
    const serve = async (): Promise<void> => {
      let response: Response;
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBodyBytes) {
        response = errorResponse(payloadTooLarge(maxBodyBytes));
        res.setHeader('connection', 'close');
      } else {
        let request: Request;
        try {
          request = toRequest(req, base);
        } catch {
          response = errorResponse(new HttpError(400, 'bad_request', 'the request line or headers are malformed'));
          await writeResponse(res, response);
          return;
        }
        response = await app(request);
      }
      // A body the app answered without reading to its end is never read now: node:http would keep
      // the connection for the next request behind those bytes, and that request would hang.
      if (!req.complete) res.setHeader('connection', 'close');
      await writeResponse(res, response);
    };
    serve().catch((err: unknown) => {
      onError('http response failed', { path: req.url, error: (err as Error).message });
      // Once headers are out, the status cannot change: cut the response short instead.
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: { code: 'internal', message: 'internal server error' } }));
    });
  });

  await new Promise<void>((resolve, reject) => {
    const refused = (err: NodeJS.ErrnoException) => reject(new ListenError(host, port, err));
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  base = `http://${hostPart}:${address.port}`;

  return {
    url: base,
    close: () =>
      new Promise<void>((resolve) => {
        const grace = setTimeout(() => server.closeAllConnections(), options.closeGraceMs ?? 5_000);
        server.close(() => {
          clearTimeout(grace);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
