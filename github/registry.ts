/**
 * One GitHubPort per configured credentials name, built on first use (so a
 * missing secret only fails the pools that use it) and kept while its secret
 * stays the same: an App's installation token cache lives in its Octokit
 * instance. A secret file replaced by a rotation (a new token, a new private
 * key) gets a new port at the next call after it is seen, so no process needs
 * a restart; callers ask the registry for the port per call.
 */
import { RotatingSecret } from '../config/rotating-secret';
import type { GitHubCredentialsConfig, RunnerflowConfig, SecretRef } from '../config/schema';
import { ActionsServiceClient } from './actions/client';
import type { ActionsServicePort } from './actions/port';
import { OctokitGitHub, type GitHubAuth, type GitHubLogger } from './octokit-github';
import { scopeKey, type GitHubPort, type GitHubScope, type ScopeWebhooksPort, type WebhookDeliveriesPort } from './port';

export interface GitHubRegistry {
  get(credentialsName: string): GitHubPort;
  /** The Actions service (runner scale sets) for a scope, reached with these credentials. */
  actions?(credentialsName: string, scope: GitHubScope): ActionsServicePort;
  /** The App's webhook deliveries, for App credentials. */
  hooks?(credentialsName: string): WebhookDeliveriesPort;
  /** Repositories' and organisations' webhooks, for token credentials. */
  scopeHooks?(credentialsName: string): ScopeWebhooksPort;
}

/** A registration token through the REST port: what the Actions-service exchange starts from. */
export async function registrationTokenFor(port: GitHubPort, scope: GitHubScope): Promise<string> {
  const credential = await port.createRunnerCredential({ scope, name: 'scale-set-listener', labels: ['self-hosted'], runnerGroupId: 1, workFolder: '_work', jit: false });
  if (credential.kind !== 'registration-token') throw new Error('expected a registration token');
  return credential.token;
}

export class UnknownGitHubCredentialsError extends Error {
  constructor(name: string, known: string[]) {
    super(
      `no GitHub credentials named "${name}" in github.credentials` +
        (known.length > 0 ? ` (configured: ${known.map((k) => `"${k}"`).join(', ')})` : ' (none configured)'),
    );
    this.name = 'UnknownGitHubCredentialsError';
  }
}

function authOf(credentials: GitHubCredentialsConfig, secret: string): GitHubAuth {
  const auth = credentials.auth;
  if (auth.type === 'pat') return { type: 'pat', token: secret };
  return { type: 'app', appId: auth.appId, installationId: auth.installationId, privateKey: secret };
}

/** Where the credentials' secret comes from: the token, or the App's private key. */
export const secretRefOf = (credentials: GitHubCredentialsConfig): SecretRef => (credentials.auth.type === 'pat' ? credentials.auth.token : credentials.auth.privateKey);

interface CredentialsEntry {
  port: OctokitGitHub;
  secret: RotatingSecret;
}

export function createGitHubRegistry(
  config: RunnerflowConfig,
  env: NodeJS.ProcessEnv = process.env,
  logger?: GitHubLogger,
): GitHubRegistry {
  const entries = new Map<string, CredentialsEntry>();
  const actionsClients = new Map<string, ActionsServicePort>();
  const portOf = (credentials: GitHubCredentialsConfig, secret: RotatingSecret, value: string): OctokitGitHub =>
    new OctokitGitHub({
      credentialsName: credentials.name,
      apiUrl: credentials.apiUrl,
      webUrl: credentials.webUrl,
      auth: authOf(credentials, value),
      logger,
      onUnauthorized: () => secret.recheckSoon(),
    });
  const octokitFor = (credentialsName: string): OctokitGitHub => {
    const credentials = config.github.credentials.find((c) => c.name === credentialsName);
    if (!credentials) throw new UnknownGitHubCredentialsError(credentialsName, config.github.credentials.map((c) => c.name));
    const entry = entries.get(credentialsName);
    if (!entry) {
      const secret = new RotatingSecret(secretRefOf(credentials), env, config.github.secretRecheck);
      const port = portOf(credentials, secret, secret.read().value);
      entries.set(credentialsName, { port, secret });
      return port;
    }
    const reading = entry.secret.read();
    if (reading.problem) logger?.warn('github credentials: their secret file changed but cannot be read yet; the last value stays in use', { credentials: credentialsName, problem: reading.problem });
    if (reading.changed) {
      entry.port = portOf(credentials, entry.secret, reading.value);
      logger?.info('github credentials: their secret file has a new value; calls from now on use it', { credentials: credentialsName });
    }
    return entry.port;
  };
  const registry: GitHubRegistry = {
    actions(credentialsName, scope) {
      const key = `${credentialsName}\u0000${scopeKey(scope)}`;
      const cached = actionsClients.get(key);
      if (cached) return cached;
      // Unknown credentials are refused here, naming the configured ones, not at the first exchange.
      registry.get(credentialsName);
      const credentials = config.github.credentials.find((c) => c.name === credentialsName)!;
      const client = new ActionsServiceClient({
        apiUrl: credentials.apiUrl,
        ...(credentials.webUrl ? { webUrl: credentials.webUrl } : {}),
        scope,
        // Asked for per exchange: the credentials' secret may have been rotated since.
        registrationToken: () => registrationTokenFor(registry.get(credentialsName), scope),
      });
      actionsClients.set(key, client);
      return client;
    },
    hooks: (credentialsName) => octokitFor(credentialsName),
    scopeHooks: (credentialsName) => octokitFor(credentialsName),
    get: (credentialsName) => octokitFor(credentialsName),
  };
  return registry;
}
