/**
 * Request bodies are read with a byte cap, whatever Content-Length claims, so a
 * chunked or lying client cannot make the process buffer more than the limit.
 */
import type { z } from 'zod';
import { BodyTooLargeError, readBoundedBody } from '../webhooks/bounded-body';
import { HttpError, badRequest, validationError } from './errors';

export function payloadTooLarge(limit: number): HttpError {
  return new HttpError(413, 'payload_too_large', `request body exceeds the limit of ${limit} bytes`);
}

export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  try {
    return await readBoundedBody(request, limit);
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
      await request.body?.cancel().catch(() => undefined);
      throw payloadTooLarge(limit);
    }
    throw err;
  }
}

/**
 * Deepest nesting of arrays and objects a body may have. Nothing the API takes comes close;
 * a deeper value parses, but then overflows the stack of whatever walks it (validation,
 * the payload converter), which would answer 500 instead of saying what is wrong.
 */
export const MAX_JSON_DEPTH = 64;

/** How deep the arrays and objects of a JSON text nest, stopping once past `max`; strings are skipped. */
function jsonDepthOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

export async function readJson(request: Request, limit: number): Promise<unknown> {
  const bytes = await readBodyBytes(request, limit);
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === '') throw badRequest('request body is empty; a JSON object is expected');
  if (jsonDepthOver(text, MAX_JSON_DEPTH)) {
    throw new HttpError(400, 'too_deep', `request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; nothing the API takes needs more`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(err as Error).message}`);
  }
}

/** Reads the JSON body and validates it; a zod failure becomes a 400 naming each field. */
export async function readValidJson<S extends z.ZodType>(request: Request, schema: S, limit: number, what = 'request body'): Promise<z.output<S>> {
  const raw = await readJson(request, limit);
  const result = schema.safeParse(raw);
  if (!result.success) throw validationError(result.error, what);
  return result.data;
}
