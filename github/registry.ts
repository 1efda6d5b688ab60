/**
 * One GitHubPort per configured credentials name, built on first use (so a
 * missing secret only fails the pools that use it) and kept for the process:
 * an App's installation token cache lives in its Octokit instance.
 */
import { resolveSecret } from '../config/load';
import type { GitHubCredentialsConfig, RunnerflowConfig } from '../config/schema';
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

function authOf(credentials: GitHubCredentialsConfig, env: NodeJS.ProcessEnv): GitHubAuth {
  const auth = credentials.auth;
  if (auth.type === 'pat') return { type: 'pat', token: resolveSecret(auth.token, env) ?? '' };
  return { type: 'app', appId: auth.appId, installationId: auth.installationId, privateKey: resolveSecret(auth.privateKey, env) ?? '' };
}

export function createGitHubRegistry(
  config: RunnerflowConfig,
  env: NodeJS.ProcessEnv = process.env,
  logger?: GitHubLogger,
): GitHubRegistry {
  const ports = new Map<string, OctokitGitHub>();
  const actionsClients = new Map<string, ActionsServicePort>();
  const octokitFor = (credentialsName: string): OctokitGitHub => {
    const cached = ports.get(credentialsName);
    if (cached) return cached;
    const credentials = config.github.credentials.find((c) => c.name === credentialsName);
    if (!credentials) throw new UnknownGitHubCredentialsError(credentialsName, config.github.credentials.map((c) => c.name));
    const port = new OctokitGitHub({
      credentialsName,
      apiUrl: credentials.apiUrl,
      webUrl: credentials.webUrl,
      auth: authOf(credentials, env),
      logger,
    });
    ports.set(credentialsName, port);
    return port;
  };
  const registry: GitHubRegistry = {
    actions(credentialsName, scope) {
      const key = `${credentialsName}\u0000${scopeKey(scope)}`;
      const cached = actionsClients.get(key);
      if (cached) return cached;
      const port = registry.get(credentialsName);
      const credentials = config.github.credentials.find((c) => c.name === credentialsName)!;
      const client = new ActionsServiceClient({
        apiUrl: credentials.apiUrl,
        ...(credentials.webUrl ? { webUrl: credentials.webUrl } : {}),
        scope,
        registrationToken: () => registrationTokenFor(port, scope),
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
