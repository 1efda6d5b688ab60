/**
 * `workflow_job` webhook payloads in GitHub's shape: the same fields as the
 * examples GitHub publishes (@octokit/webhooks-examples, `queued` example),
 * filled from the simulated job. test/github checks the key sets stay equal.
 */
import type { SimJob } from './sim-state';

export type WorkflowJobAction = 'queued' | 'in_progress' | 'completed';

function account(login: string, id: number, type: 'User' | 'Organization'): Record<string, unknown> {
  const api = `https://api.github.com/users/${login}`;
  return {
    login,
    id,
    node_id: Buffer.from(`04:${type}${id}`).toString('base64'),
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: '',
    url: api,
    html_url: `https://github.com/${login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type,
    site_admin: false,
  };
}

const REPO_URL_SUFFIXES: Record<string, string> = {
  forks_url: '/forks',
  keys_url: '/keys{/key_id}',
  collaborators_url: '/collaborators{/collaborator}',
  teams_url: '/teams',
  hooks_url: '/hooks',
  issue_events_url: '/issues/events{/number}',
  events_url: '/events',
  assignees_url: '/assignees{/user}',
  branches_url: '/branches{/branch}',
  tags_url: '/tags',
  blobs_url: '/git/blobs{/sha}',
  git_tags_url: '/git/tags{/sha}',
  git_refs_url: '/git/refs{/sha}',
  trees_url: '/git/trees{/sha}',
  statuses_url: '/statuses/{sha}',
  languages_url: '/languages',
  stargazers_url: '/stargazers',
  contributors_url: '/contributors',
  subscribers_url: '/subscribers',
  subscription_url: '/subscription',
  commits_url: '/commits{/sha}',
  git_commits_url: '/git/commits{/sha}',
  comments_url: '/comments{/number}',
  issue_comment_url: '/issues/comments{/number}',
  contents_url: '/contents/{+path}',
  compare_url: '/compare/{base}...{head}',
  merges_url: '/merges',
  archive_url: '/{archive_format}{/ref}',
  downloads_url: '/downloads',
  issues_url: '/issues{/number}',
  pulls_url: '/pulls{/number}',
  milestones_url: '/milestones{/number}',
  notifications_url: '/notifications{?since,all,participating}',
  labels_url: '/labels{/name}',
  releases_url: '/releases{/id}',
  deployments_url: '/deployments',
};

/** Stable small ids derived from names, so payloads of one repository agree. */
export function idOf(text: string): number {
  let h = 7;
  for (const c of text) h = (h * 31 + c.charCodeAt(0)) % 900_000_000;
  return 100_000_000 + h;
}

export function repository(fullName: string): Record<string, unknown> {
  const [owner = 'octo-org', name = 'octo-repo'] = fullName.split('/');
  const api = `https://api.github.com/repos/${fullName}`;
  const id = idOf(fullName);
  const urls = Object.fromEntries(Object.entries(REPO_URL_SUFFIXES).map(([key, suffix]) => [key, api + suffix]));
  return {
    id,
    node_id: Buffer.from(`010:Repository${id}`).toString('base64'),
    name,
    full_name: fullName,
    private: true,
    owner: account(owner, idOf(owner), 'Organization'),
    html_url: `https://github.com/${fullName}`,
    description: null,
    fork: false,
    url: api,
    ...urls,
    created_at: '2024-01-02T10:00:00Z',
    updated_at: '2024-01-02T10:00:00Z',
    pushed_at: '2024-01-02T10:00:00Z',
    git_url: `git://github.com/${fullName}.git`,
    ssh_url: `git@github.com:${fullName}.git`,
    clone_url: `https://github.com/${fullName}.git`,
    svn_url: `https://github.com/${fullName}`,
    homepage: null,
    size: 0,
    stargazers_count: 0,
    watchers_count: 0,
    language: null,
    has_issues: true,
    has_projects: true,
    has_downloads: true,
    has_wiki: true,
    has_pages: false,
    forks_count: 0,
    mirror_url: null,
    archived: false,
    disabled: false,
    open_issues_count: 0,
    license: null,
    forks: 0,
    open_issues: 0,
    watchers: 0,
    default_branch: 'main',
    is_template: false,
    topics: [],
    visibility: 'private',
    web_commit_signoff_required: false,
    custom_properties: {},
  };
}

export function workflowJobPayload(action: WorkflowJobAction, job: SimJob): Record<string, unknown> {
  return { action, workflow_job: jobJson(job, action), repository: repository(job.repository), sender: account('octocat', 583231, 'User') };
}

/** The job as GitHub shows it, in a webhook (`action` given) or in the REST API (as it is now). */
export function jobJson(job: SimJob, action: WorkflowJobAction = job.status): Record<string, unknown> {
  const api = `https://api.github.com/repos/${job.repository}`;
  const ran = action !== 'queued' && job.runnerId !== undefined;
  return {
    id: job.id,
    run_id: job.runId,
    run_url: `${api}/actions/runs/${job.runId}`,
    run_attempt: 1,
    node_id: Buffer.from(`08:CheckRun${job.id}`).toString('base64'),
    head_sha: idOf(job.repository).toString(16).padEnd(40, '0'),
    head_branch: 'main',
    url: `${api}/actions/jobs/${job.id}`,
    html_url: `https://github.com/${job.repository}/actions/runs/${job.runId}/job/${job.id}`,
    status: job.status,
    conclusion: action === 'completed' ? job.conclusion : null,
    started_at: job.startedAt ?? job.createdAt,
    created_at: job.createdAt,
    completed_at: action === 'completed' ? (job.completedAt ?? null) : null,
    name: job.name,
    steps: [],
    check_run_url: `${api}/check-runs/${job.id}`,
    labels: job.labels,
    runner_id: ran ? job.runnerId : null,
    runner_name: ran ? (job.runnerName ?? null) : null,
    runner_group_id: ran ? (job.runnerGroupId ?? null) : null,
    runner_group_name: ran ? 'Default' : null,
    workflow_name: job.workflowName,
  };
}
