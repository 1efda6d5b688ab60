/**
 * Tokens an instance uses to call back (status callbacks). Each is bound to one
 * instance name and the workflow run that created it, so a token leaked from a
 * deleted or replaced instance cannot speak for its successor.
 */
import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';

const ISSUER = 'runnerflow';
const AUDIENCE = 'runnerflow-instance-callback';
const ALG = 'HS256';

export interface InstanceTokenClaims {
  instance: string;
  runId: string;
  pool: string;
}

export type InstanceTokenFailure = 'expired' | 'bad_signature' | 'malformed';

export class InstanceTokenError extends Error {
  constructor(
    readonly reason: InstanceTokenFailure,
    message: string,
  ) {
    super(message);
    this.name = 'InstanceTokenError';
  }
}

function keyBytes(key: string): Uint8Array {
  if (key.length < 16) throw new Error('instance token key must be at least 16 characters');
  return new TextEncoder().encode(key);
}

export async function mintInstanceToken(claims: InstanceTokenClaims, key: string, ttlMs: number): Promise<string> {
  if (!claims.instance || !claims.runId || !claims.pool) throw new Error('instance token claims need instance, runId and pool');
  const nowSec = Math.floor(Date.now() / 1000);
  return new SignJWT({ runId: claims.runId, pool: claims.pool })
    .setProtectedHeader({ alg: ALG, typ: 'JWT' })
    .setSubject(claims.instance)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(nowSec)
    .setExpirationTime(nowSec + Math.max(1, Math.ceil(ttlMs / 1000)))
    .sign(keyBytes(key));
}

export async function verifyInstanceToken(token: string, key: string): Promise<InstanceTokenClaims> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, keyBytes(key), { issuer: ISSUER, audience: AUDIENCE, algorithms: [ALG] }));
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new InstanceTokenError('expired', 'instance token has expired');
    if (err instanceof joseErrors.JWSSignatureVerificationFailed) throw new InstanceTokenError('bad_signature', 'instance token signature does not verify');
    if (err instanceof joseErrors.JOSEError) throw new InstanceTokenError('malformed', `instance token is malformed: ${err.message}`);
    throw err;
  }
  const { sub, runId, pool } = payload;
  if (typeof sub !== 'string' || !sub || typeof runId !== 'string' || !runId || typeof pool !== 'string' || !pool) {
    throw new InstanceTokenError('malformed', 'instance token lacks instance, runId or pool');
  }
  return { instance: sub, runId, pool };
}
