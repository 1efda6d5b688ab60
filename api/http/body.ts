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

export async function readJson(request: Request, limit: number): Promise<unknown> {
  const bytes = await readBodyBytes(request, limit);
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === '') throw badRequest('request body is empty; a JSON object is expected');
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
