/**
 * The part of GARM's metadata service that GARM's install templates use to
 * register a runner with a registration token: images made for GARM providers
 * call `${metadata-url}/runner-registration-token/` with their instance token.
 */
import { GitHubApiError, GitHubRateLimitError } from '../../github/port';
import { HttpError } from '../http/errors';
import type { Route } from '../http/router';
import { authenticateInstance, requireLiveRun } from '../instance-auth';
import { githubMemoOf } from '../runner-removal';
import type { Services } from '../services';

async function registrationToken({ request, services }: { request: Request; services: Services }): Promise<Response> {
  const claims = await authenticateInstance(request, services.deps.secrets.instanceTokenKey);
  const memo = githubMemoOf(await requireLiveRun(services, claims));
  if (!memo) throw new HttpError(409, 'no_github_scope', `instance ${claims.instance} carries no GitHub credentials/scope in its memo`);
  try {
    const credential = await services.deps.github.get(memo.credentials).createRunnerCredential({
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

const doc = {
  tag: 'callbacks',
  summary: "A runner registration token for the calling instance (GARM's metadata service), authenticated by the instance's own token",
  responses: { 200: 'The token, as text', 401: 'Missing or invalid token', 403: 'Token of another, deleted or replaced instance', 502: 'GitHub refused' },
};

export const metadataRoutes: Route<Services>[] = [
  // GARM's templates call the path with a trailing slash; both forms are served.
  { method: 'GET', path: '/api/v1/metadata/runner-registration-token/', auth: 'instance-token', doc, handle: registrationToken },
  { method: 'GET', path: '/api/v1/metadata/runner-registration-token', auth: 'instance-token', doc, handle: registrationToken },
];
