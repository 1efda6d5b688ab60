import type { HttpError } from './errors';

const JSON_TYPE = 'application/json; charset=utf-8';

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': JSON_TYPE, ...headers } });
}

/**
 * How much of an error message an answer carries. Messages quote what was wrong, and what was
 * wrong may be a caller's 100 KB name: the start says where, the length says the rest.
 */
const MAX_MESSAGE_LENGTH = 2_000;
const bounded = (text: string): string => (text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH)}… (${text.length} characters in all)` : text);

export function errorResponse(error: HttpError): Response {
  const body: { code: string; message: string; details?: unknown } = { code: error.code, message: bounded(error.message) };
  if (error.details !== undefined) {
    body.details = Array.isArray(error.details)
      ? error.details.map((d: unknown) => (d && typeof d === 'object' && typeof (d as { message?: unknown }).message === 'string' ? { ...d, message: bounded((d as { message: string }).message) } : d))
      : error.details;
  }
  return json({ error: body }, error.status, error.headers);
}
