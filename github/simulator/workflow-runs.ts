/**
 * The simulated repository's workflow runs and their jobs, as GitHub's REST API
 * lists them (`GET .../actions/runs`, `GET .../actions/runs/{run_id}/jobs`): what
 * runnerflow reads to find jobs still queued whose `queued` webhook was lost.
 */
import type { SimResponse } from './http-util';
import { idOf, jobJson, repository } from './workflow-job-payload';
import type { SimJob, SimState } from './sim-state';

/** When a repository whose runs never came from a push was last pushed to. */
const LONG_AGO = '2024-01-02T10:00:00Z';

type RunStatus = 'queued' | 'in_progress' | 'completed';

function runStatus(jobs: SimJob[]): RunStatus {
  if (jobs.some((j) => j.status === 'in_progress')) return 'in_progress';
  if (jobs.some((j) => j.status === 'queued')) return 'queued';
  return 'completed';
}

function runJson(fullName: string, runId: number, jobs: SimJob[]): Record<string, unknown> {
  const api = `https://api.github.com/repos/${fullName}`;
  const first = jobs[0]!;
  const status = runStatus(jobs);
  const sha = idOf(fullName).toString(16).padEnd(40, '0');
  const updated = jobs.map((j) => j.completedAt ?? j.startedAt ?? j.createdAt).sort().pop() ?? first.createdAt;
  const person = { name: 'Monalisa Octocat', email: 'octocat@github.com' };
  return {
    id: runId,
    name: first.workflowName,
    node_id: Buffer.from(`04:WorkflowRun${runId}`).toString('base64'),
    head_branch: 'main',
    head_sha: sha,
    path: '.github/workflows/ci.yml',
    display_title: first.workflowName,
    run_number: runId % 100_000,
    event: first.event,
    status,
    conclusion: status === 'completed' ? (jobs.some((j) => j.conclusion === 'failure') ? 'failure' : 'success') : null,
    workflow_id: idOf(`${fullName}/ci.yml`),
    url: `${api}/actions/runs/${runId}`,
    html_url: `https://github.com/${fullName}/actions/runs/${runId}`,
    pull_requests: [],
    created_at: first.createdAt,
    updated_at: updated,
    run_attempt: 1,
    run_started_at: first.createdAt,
    jobs_url: `${api}/actions/runs/${runId}/jobs`,
    logs_url: `${api}/actions/runs/${runId}/logs`,
    check_suite_url: `${api}/check-suites/${runId}`,
    artifacts_url: `${api}/actions/runs/${runId}/artifacts`,
    cancel_url: `${api}/actions/runs/${runId}/cancel`,
    rerun_url: `${api}/actions/runs/${runId}/rerun`,
    workflow_url: `${api}/actions/workflows/${idOf(`${fullName}/ci.yml`)}`,
    head_commit: { id: sha, tree_id: sha, message: 'Update CI', timestamp: first.createdAt, author: person, committer: person },
    repository: repository(fullName),
    head_repository: repository(fullName),
  };
}

function page<T>(items: T[], query: URLSearchParams): { items: T[]; page: number; lastPage: number } {
  const perPage = Math.min(100, Math.max(1, Number(query.get('per_page') ?? 30) || 30));
  const at = Math.max(1, Number(query.get('page') ?? 1) || 1);
  return { items: items.slice((at - 1) * perPage, at * perPage), page: at, lastPage: Math.max(1, Math.ceil(items.length / perPage)) };
}

export class SimWorkflowRuns {
  constructor(
    private readonly state: SimState,
    private readonly link: (url: URL, page: number, lastPage: number) => string | undefined,
  ) {}

  private runsOf(fullName: string): Map<number, SimJob[]> {
    const runs = new Map<number, SimJob[]>();
    for (const job of this.state.jobs.values()) {
      if (job.repository.toLowerCase() !== fullName.toLowerCase()) continue;
      runs.set(job.runId, [...(runs.get(job.runId) ?? []), job]);
    }
    return runs;
  }

  listRuns(owner: string, repo: string, query: URLSearchParams, url: URL): SimResponse {
    const fullName = `${owner}/${repo}`;
    const wanted = query.get('status');
    const runs = [...this.runsOf(fullName).entries()]
      .filter(([, jobs]) => wanted === null || runStatus(jobs) === wanted)
      .sort(([a], [b]) => b - a);
    const shown = page(runs, query);
    const link = this.link(url, shown.page, shown.lastPage);
    return {
      status: 200,
      body: { total_count: runs.length, workflow_runs: shown.items.map(([id, jobs]) => runJson(fullName, id, jobs)) },
      headers: link ? { link } : undefined,
    };
  }

  /**
   * The organisation's repositories as `GET /orgs/{org}/repos` lists them: every repository a job
   * was queued in, pushed when its latest run started by a push was made (one whose runs all came
   * from a schedule or a dispatch was last pushed to long ago). Sorted by `pushed` or by name
   * (GitHub's other orders, by creation and update, are by name here: every simulated repository
   * was made at once).
   */
  listOrgRepositories(org: string, query: URLSearchParams, url: URL): SimResponse {
    const pushedAt = new Map<string, string>();
    for (const job of this.state.jobs.values()) {
      if (job.repository.split('/')[0]?.toLowerCase() !== org.toLowerCase()) continue;
      const at = pushedAt.get(job.repository) ?? LONG_AGO;
      pushedAt.set(job.repository, job.event === 'push' && Date.parse(job.createdAt) > Date.parse(at) ? job.createdAt : at);
    }
    const byPush = query.get('sort') === 'pushed';
    const ascending = (query.get('direction') ?? (byPush ? 'desc' : 'asc')) === 'asc';
    const repos = [...pushedAt.entries()].sort(([a, at], [b, bt]) => {
      const order = byPush ? Date.parse(at) - Date.parse(bt) || a.localeCompare(b) : a.localeCompare(b);
      return ascending ? order : -order;
    });
    const shown = page(repos, query);
    const link = this.link(url, shown.page, shown.lastPage);
    return { status: 200, body: shown.items.map(([fullName, at]) => ({ ...repository(fullName), pushed_at: at, updated_at: at })), headers: link ? { link } : undefined };
  }

  /** One job as the REST API shows it now; undefined when the repository has no such job. */
  getJob(owner: string, repo: string, jobId: number): SimResponse | undefined {
    const job = this.state.jobs.get(jobId);
    if (!job || job.repository.toLowerCase() !== `${owner}/${repo}`.toLowerCase()) return undefined;
    return { status: 200, body: jobJson(job) };
  }

  listJobs(owner: string, repo: string, runId: number, query: URLSearchParams, url: URL): SimResponse {
    const jobs = this.runsOf(`${owner}/${repo}`).get(runId) ?? [];
    const shown = page(jobs, query);
    const link = this.link(url, shown.page, shown.lastPage);
    return { status: 200, body: { total_count: jobs.length, jobs: shown.items.map((j) => jobJson(j)) }, headers: link ? { link } : undefined };
  }
}
