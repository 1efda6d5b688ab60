import { describe, expect, it } from 'vitest';
import { InstanceTokenError, mintInstanceToken, verifyInstanceToken } from '../../api/instance-token';

const KEY = 'instance-token-key-for-unit-tests';
const claims = { instance: 'pool-a-0001', runId: '0195-run', pool: 'pool-a' };

async function failure(promise: Promise<unknown>): Promise<InstanceTokenError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InstanceTokenError);
  return err as InstanceTokenError;
}

describe('instance tokens', () => {
  it('carry the instance, its run id and its pool', async () => {
    const token = await mintInstanceToken(claims, KEY, 60_000);
    expect(await verifyInstanceToken(token, KEY)).toEqual(claims);
  });

  it('are refused once expired', async () => {
    const token = await mintInstanceToken(claims, KEY, 1);
    await new Promise((r) => setTimeout(r, 2_100));
    const err = await failure(verifyInstanceToken(token, KEY));
    expect(err.reason).toBe('expired');
  });

  it('are refused when signed with another key', async () => {
    const token = await mintInstanceToken(claims, 'some-other-key-of-enough-length', 60_000);
    expect((await failure(verifyInstanceToken(token, KEY))).reason).toBe('bad_signature');
  });

  it('are refused when tampered with', async () => {
    const token = await mintInstanceToken(claims, KEY, 60_000);
    const [header, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'pool-a-0002', runId: claims.runId, pool: claims.pool })).toString('base64url');
    expect((await failure(verifyInstanceToken(`${header}.${forged}.${signature}`, KEY))).reason).toBe('bad_signature');
  });

  it('are refused when not a token at all', async () => {
    expect((await failure(verifyInstanceToken('not-a-jwt', KEY))).reason).toBe('malformed');
    expect((await failure(verifyInstanceToken('a.b.c', KEY))).reason).toBe('malformed');
  });

  it('cannot be minted without every claim or with a short key', async () => {
    await expect(mintInstanceToken({ ...claims, runId: '' }, KEY, 1_000)).rejects.toThrow(/runId/);
    await expect(mintInstanceToken(claims, 'short', 1_000)).rejects.toThrow(/at least 16/);
  });
});
