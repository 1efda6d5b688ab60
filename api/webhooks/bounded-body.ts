/**
 * Reads a request body up to a byte limit. Content-Length is checked first so
 * an honest oversized delivery is refused unread; the running count catches a
 * missing or lying header.
 */
export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`body exceeds ${limitBytes} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export async function readBoundedBody(request: Request, limitBytes: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limitBytes) throw new BodyTooLargeError(limitBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limitBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLargeError(limitBytes);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}
