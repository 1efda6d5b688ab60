import type { IncomingMessage, ServerResponse } from 'node:http';

/** What a handler answers; the server adds the common headers and writes it. */
export interface SimResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class BadRequest extends Error {}

export async function readJsonBody(req: IncomingMessage, limitBytes = 1024 * 1024): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) throw new BadRequest('request body too large');
    chunks.push(buf);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new BadRequest('Problems parsing JSON');
  }
}

export function writeResponse(res: ServerResponse, answer: SimResponse): void {
  const headers: Record<string, string> = { ...answer.headers };
  if (answer.body === undefined) {
    res.writeHead(answer.status, headers).end();
    return;
  }
  const text = JSON.stringify(answer.body);
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = String(Buffer.byteLength(text));
  res.writeHead(answer.status, headers).end(text);
}

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
