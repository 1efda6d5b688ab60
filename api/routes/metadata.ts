/**
 * The part of GARM's metadata service that GARM's install templates use to
 * register a runner: images made for GARM providers call
 * `${metadata-url}/runner-registration-token/` (classic registration) or
 * `${metadata-url}/credentials/{runner,credentials,credentials_rsaparams}` (JIT)
 * with their instance token.
 */
import { GitHubApiError, GitHubRateLimitError, type GitHubPort } from '../../github/port';
import { UnknownGitHubCredentialsError } from '../../github/registry';
import { scrubSecrets } from '../../observability/secret-scrub';
import { sealedCredentialQuery, stateQuery } from '../../workflows/messages';
import { HttpError } from '../http/errors';
import type { Route } from '../http/router';
import { authenticateInstance, liveInstanceState, queryLiveRun, requireInstalling, requireLiveRun } from '../instance-auth';
import { githubMemoOf } from '../runner-removal';
import { SealedSecretError, unseal } from '../sealed-secret';
import type { Services } from '../services';
import { JIT_FILES } from '../../domain/jit-files';

/**
 * The configuration may have dropped the credentials an instance was created
 * with; that is the server's setup at odds with the instance, not a crash.
 */
function githubPortFor(services: Services, credentials: string, instance: string): GitHubPort {
  try {
    return services.deps.github.get(credentials);
  } catch (err) {
    if (err instanceof UnknownGitHubCredentialsError) {
      throw new HttpError(409, 'github_credentials_unknown', `${err.message}: instance ${instance} was created with them and gets no registration token until they are configured again`);
    }
    throw new HttpError(502, 'github_credentials_unusable', `GitHub credentials "${credentials}" of instance ${instance} cannot be used: ${scrubSecrets((err as Error).message)}`);
  }
}

const JIT_PATH = `/api/v1/metadata/credentials/{${JIT_FILES.join(',')}}`;

async function registrationToken({ request, services }: { request: Request; services: Services }): Promise<Response> {
  const claims = await authenticateInstance(request, services.deps.secrets.instanceTokenKey);
  const live = await requireLiveRun(services, claims);
  // GARM refuses these too: a JIT runner registers with its own config and never needs a
  // registration token, so one fetched with its token would serve some other runner.
  if ((live.memo as { ephemeral?: unknown } | undefined)?.ephemeral === true) {
    throw new HttpError(403, 'instance_uses_jit', `instance ${claims.instance} registers with its JIT config (${JIT_PATH}): it gets no registration token`);
  }
  const memo = githubMemoOf(live);
  if (!memo) throw new HttpError(409, 'no_github_scope', `instance ${claims.instance} carries no GitHub credentials/scope in its memo`);
  const github = githubPortFor(services, memo.credentials, claims.instance);
  requireInstalling(claims.instance, await queryLiveRun(services, claims, live.runId, stateQuery));
  try {
    const credential = await github.createRunnerCredential({
      scope: memo.scope,
      name: claims.instance,
      labels: [],
      runnerGroupId: 1,
      workFolder: '_work',
      jit: false,
    });
    if (credential.kind !== 'registration-token') throw new Error('GitHub port answered a registration-token request with a JIT config');
    services.deps.logger.info('registration token handed to instance', { instance: claims.instance });
    return new Response(credential.token, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } });
  } catch (err) {
    if (err instanceof GitHubRateLimitError) {
      throw new HttpError(503, 'github_rate_limited', err.message, undefined, { 'retry-after': String(Math.ceil(err.retryAfterMs / 1000)) });
    }
    if (err instanceof GitHubApiError) throw new HttpError(502, 'github_error', `GitHub refused a registration token: ${err.message}`);
    throw err;
  }
}

/** One runner settings file out of the instance's JIT config (GitHub encodes it as base64 JSON of base64 files). */
async function jitFile({ request, services, params }: { request: Request; services: Services; params: Record<string, string> }): Promise<Response> {
  const claims = await authenticateInstance(request, services.deps.secrets.instanceTokenKey);
  const file = params.file ?? '';
  if (!(JIT_FILES as readonly string[]).includes(file)) {
    throw new HttpError(404, 'not_found', `no JIT file "${file}" (files: ${JIT_FILES.join(', ')})`);
  }
  // The state query also proves the run alive, in place of a describe: refusing a registered
  // runner costs no round trip more than serving the file did before.
  const { runId, state } = await liveInstanceState(services, claims);
  requireInstalling(claims.instance, state);
  const sealed = await queryLiveRun(services, claims, runId, sealedCredentialQuery);
  if (!sealed) throw new HttpError(404, 'not_found', `instance ${claims.instance} is not configured with a JIT config`);
  let files: Record<string, string>;
  try {
    files = JSON.parse(Buffer.from(unseal(sealed, services.deps.secrets.instanceTokenKey), 'base64').toString('utf8')) as Record<string, string>;
  } catch (err) {
    if (err instanceof SealedSecretError) throw new HttpError(500, 'sealed_secret', `the JIT config of ${claims.instance} cannot be opened: ${err.message}`);
    throw err;
  }
  const contents = files[`.${file}`] ?? files[file];
  if (contents === undefined) throw new HttpError(404, 'not_found', `the JIT config of ${claims.instance} has no ${file} file`);
  return new Response(Buffer.from(contents, 'base64'), { status: 200, headers: { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' } });
}

const doc = {
  tag: 'callbacks',
  summary: "A runner registration token for the calling instance (GARM's metadata service), authenticated by the instance's own token",
  responses: {
    200: 'The token, as text',
    401: 'Missing or invalid token',
    403: 'Token of another, deleted or replaced instance (forbidden); of a JIT runner (instance_uses_jit); of a runner already registered (instance_registered) or leaving (instance_leaving)',
    409: 'The GitHub credentials of the instance are no longer configured',
    502: 'GitHub refused',
    503: 'GitHub rate-limited the request (github_rate_limited, with Retry-After), Temporal is not reachable, or no worker polls the task queue',
  },
};

const jitDoc = {
  tag: 'callbacks',
  summary: "A runner settings file (runner, credentials, credentials_rsaparams) of the calling instance's JIT config (GARM's metadata service)",
  responses: {
    200: 'The file',
    401: 'Missing or invalid token',
    403: 'Token of another, deleted or replaced instance (forbidden); of a runner already registered (instance_registered) or leaving (instance_leaving)',
    404: 'No such file, or not a JIT runner',
  },
};

export const metadataRoutes: Route<Services>[] = [
  { method: 'GET', path: '/api/v1/metadata/credentials/:file', auth: 'instance-token', doc: jitDoc, handle: jitFile },
  // GARM's templates call the path with a trailing slash; both forms are served.
  { method: 'GET', path: '/api/v1/metadata/runner-registration-token/', auth: 'instance-token', doc, handle: registrationToken },
  { method: 'GET', path: '/api/v1/metadata/runner-registration-token', auth: 'instance-token', doc, handle: registrationToken },
];
