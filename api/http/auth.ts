import { createHash, timingSafeEqual } from 'node:crypto';
import { HttpError } from './errors';

/** Compares digests so neither content nor length leaks through timing. */
export function constantTimeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

/** The bearer token of the request, or undefined when there is no Authorization header. */
export function bearerToken(request: Request): string | undefined {
  const header = request.headers.get('authorization');
  if (header === null) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) {
    throw new HttpError(401, 'unauthenticated', 'Authorization header must be "Bearer <token>"', undefined, { 'www-authenticate': 'Bearer' });
  }
  return match[1];
}

export function requireAdmin(request: Request, adminToken: string | undefined): void {
  const token = bearerToken(request);
  if (token === undefined) {
    throw new HttpError(401, 'unauthenticated', 'missing bearer token: send "Authorization: Bearer <admin token>"', undefined, {
      'www-authenticate': 'Bearer',
    });
  }
  if (!adminToken) {
    throw new HttpError(403, 'forbidden', 'no admin token is configured on this server (set RUNNERFLOW_ADMIN_TOKEN or api.adminToken)');
  }
  if (!constantTimeEqual(token, adminToken)) throw new HttpError(403, 'forbidden', 'the bearer token is not the admin token');
}
