/**
 * Which credentials the simulated GitHub still takes. A personal access token that expired or was
 * revoked is answered `401 Bad credentials` on every call; an App's JWT signed with a private key
 * the App no longer has is answered 401 when it asks for an installation token. Installation
 * tokens minted before a key was deleted stay good, as GitHub's do.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { githubError } from './github-api';
import type { SimResponse } from './http-util';
import type { OperationName } from './served-operations';

export class SimCredentials {
  private readonly revoked = new Set<string>();
  /** Public keys of the App's private keys; unset, any JWT is taken. */
  private appKeys?: KeyObject[];

  revokeToken(token: string): void {
    this.revoked.add(token);
  }

  /** The App's keys from now on, as PEM public keys; `undefined` takes any JWT again. */
  setAppKeys(publicKeysPem: readonly string[] | undefined): void {
    this.appKeys = publicKeysPem?.map((pem) => createPublicKey(pem));
  }

  /** GitHub's answer refusing the request's `Authorization`, or undefined when it passes. */
  refusal(authorization: string, operation: OperationName): SimResponse | undefined {
    const presented = authorization.replace(/^(token|bearer)\s+/i, '');
    if (this.revoked.has(presented)) return githubError(401, 'Bad credentials', 'https://docs.github.com/rest');
    if (operation === 'installation-access-token' && this.appKeys && !this.signedByAppKey(presented)) {
      return githubError(401, 'A JSON web token could not be decoded', 'https://docs.github.com/rest');
    }
    return undefined;
  }

  private signedByAppKey(jwt: string): boolean {
    const [header, payload, signature] = jwt.split('.');
    if (!header || !payload || !signature) return false;
    const signed = Buffer.from(`${header}.${payload}`);
    return this.appKeys!.some((key) => verify('RSA-SHA256', signed, key, Buffer.from(signature, 'base64url')));
  }
}
