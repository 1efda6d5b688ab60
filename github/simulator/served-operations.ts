/**
 * The GitHub REST operations the simulator serves, with GitHub's own path
 * templates. The router matches requests against these and the OpenAPI subset
 * (scripts/openapi/extract-github-subset.ts) is extracted for exactly these.
 */

export type ScopeKind = 'repo' | 'org' | 'enterprise';

export type OperationName =
  | 'list-runners'
  | 'get-runner'
  | 'delete-runner'
  | 'registration-token'
  | 'remove-token'
  | 'generate-jitconfig'
  | 'runner-downloads'
  | 'installation-access-token'
  | 'list-org-repositories'
  | 'list-workflow-runs'
  | 'list-jobs-for-workflow-run'
  | 'get-job-for-workflow-run'
  | 'list-webhook-deliveries'
  | 'redeliver-webhook-delivery'
  | 'list-hooks'
  | 'list-hook-deliveries'
  | 'redeliver-hook-delivery'
  | 'rate-limit';

export interface ServedOperation {
  name: OperationName;
  scope: ScopeKind | 'app';
  method: 'GET' | 'POST' | 'DELETE';
  /** GitHub's path template, e.g. /repos/{owner}/{repo}/actions/runners/{runner_id}. */
  template: string;
  /** Which published description documents it: enterprise endpoints are GitHub Enterprise Cloud only. */
  description: 'api.github.com' | 'ghec';
}

export const SCOPE_PREFIXES: Record<ScopeKind, string> = {
  repo: '/repos/{owner}/{repo}',
  org: '/orgs/{org}',
  enterprise: '/enterprises/{enterprise}',
};

const RUNNER_OPERATIONS: { name: OperationName; method: ServedOperation['method']; suffix: string }[] = [
  { name: 'list-runners', method: 'GET', suffix: '/actions/runners' },
  { name: 'runner-downloads', method: 'GET', suffix: '/actions/runners/downloads' },
  { name: 'registration-token', method: 'POST', suffix: '/actions/runners/registration-token' },
  { name: 'remove-token', method: 'POST', suffix: '/actions/runners/remove-token' },
  { name: 'generate-jitconfig', method: 'POST', suffix: '/actions/runners/generate-jitconfig' },
  { name: 'get-runner', method: 'GET', suffix: '/actions/runners/{runner_id}' },
  { name: 'delete-runner', method: 'DELETE', suffix: '/actions/runners/{runner_id}' },
];

export const SERVED_OPERATIONS: readonly ServedOperation[] = [
  ...(Object.keys(SCOPE_PREFIXES) as ScopeKind[]).flatMap((scope) =>
    RUNNER_OPERATIONS.map((op) => ({
      name: op.name,
      scope,
      method: op.method,
      template: SCOPE_PREFIXES[scope] + op.suffix,
      description: scope === 'enterprise' ? ('ghec' as const) : ('api.github.com' as const),
    })),
  ),
  // An organisation's repositories, most lately pushed first: where its pools' lost jobs are looked for.
  { name: 'list-org-repositories', scope: 'org', method: 'GET', template: '/orgs/{org}/repos', description: 'api.github.com' },
  // Only a repository has a listing of its queued runs and their jobs; GitHub has none per organisation.
  { name: 'list-workflow-runs', scope: 'repo', method: 'GET', template: '/repos/{owner}/{repo}/actions/runs', description: 'api.github.com' },
  { name: 'list-jobs-for-workflow-run', scope: 'repo', method: 'GET', template: '/repos/{owner}/{repo}/actions/runs/{run_id}/jobs', description: 'api.github.com' },
  { name: 'get-job-for-workflow-run', scope: 'repo', method: 'GET', template: '/repos/{owner}/{repo}/actions/jobs/{job_id}', description: 'api.github.com' },
  {
    name: 'installation-access-token',
    scope: 'app',
    method: 'POST',
    template: '/app/installations/{installation_id}/access_tokens',
    description: 'api.github.com',
  },
  // What the credentials have left of their hourly window (not itself counted against it).
  { name: 'rate-limit', scope: 'app', method: 'GET', template: '/rate_limit', description: 'api.github.com' },
  // The App's own webhook: its recent deliveries, and sending a failed one again.
  { name: 'list-webhook-deliveries', scope: 'app', method: 'GET', template: '/app/hook/deliveries', description: 'api.github.com' },
  { name: 'redeliver-webhook-delivery', scope: 'app', method: 'POST', template: '/app/hook/deliveries/{delivery_id}/attempts', description: 'api.github.com' },
  // A repository's or an organisation's webhooks (what token credentials have instead of an App's): the same three steps.
  ...(['repo', 'org'] as const).flatMap((scope) => [
    { name: 'list-hooks' as const, scope, method: 'GET' as const, template: `${SCOPE_PREFIXES[scope]}/hooks`, description: 'api.github.com' as const },
    { name: 'list-hook-deliveries' as const, scope, method: 'GET' as const, template: `${SCOPE_PREFIXES[scope]}/hooks/{hook_id}/deliveries`, description: 'api.github.com' as const },
    {
      name: 'redeliver-hook-delivery' as const,
      scope,
      method: 'POST' as const,
      template: `${SCOPE_PREFIXES[scope]}/hooks/{hook_id}/deliveries/{delivery_id}/attempts`,
      description: 'api.github.com' as const,
    },
  ]),
];

export const operationKey = (op: Pick<ServedOperation, 'method' | 'template'>): string => `${op.method} ${op.template}`;
