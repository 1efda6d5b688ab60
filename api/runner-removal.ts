/**
 * GARM's forced delete: before the instance is torn down, GitHub is asked to
 * drop the runner. If GitHub says it is running a job, the operator is told to
 * cancel the job first instead of yanking the machine from under it.
 */
import { scrubSecrets } from '../observability/secret-scrub';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { GitHubScope, RemoveRunnerOutcome } from '../github/port';
import type { GitHubRegistry } from './deps';
import { HttpError, conflict } from './http/errors';

export interface RunnerGitHubMemo {
  credentials: string;
  scope: GitHubScope;
}

export function githubMemoOf(description: WorkflowExecutionDescription): RunnerGitHubMemo | undefined {
  const github = (description.memo as { github?: Partial<RunnerGitHubMemo> } | undefined)?.github;
  if (!github || typeof github.credentials !== 'string' || typeof github.scope !== 'object' || github.scope === null) return undefined;
  return { credentials: github.credentials, scope: github.scope };
}

export type GitHubRemoval = RemoveRunnerOutcome | 'bypassed';

/**
 * Removes the runner from GitHub. Busy → 409 and GitHub failures → 502, unless
 * `bypassBusy`, in which case the forced delete goes ahead regardless.
 */
export async function removeFromGitHub(args: {
  name: string;
  github: GitHubRegistry;
  memo: RunnerGitHubMemo | undefined;
  bypassBusy: boolean;
}): Promise<{ outcome: GitHubRemoval; warning?: string }> {
  const { name, memo, bypassBusy } = args;
  let outcome: RemoveRunnerOutcome;
  try {
    if (!memo) throw new Error(`runner ${name} carries no GitHub credentials/scope in its memo`);
    outcome = await args.github.get(memo.credentials).removeRunner({ scope: memo.scope, name });
  } catch (err) {
    const reason = `GitHub could not remove runner ${name}: ${scrubSecrets((err as Error).message)}`;
    if (bypassBusy) return { outcome: 'bypassed', warning: reason };
    throw new HttpError(502, 'github_error', `${reason}; retry later, or add bypassBusy=true to delete it anyway`);
  }
  if (outcome === 'busy') {
    if (bypassBusy) return { outcome: 'bypassed', warning: `runner ${name} is running a job on GitHub; deleted anyway (bypassBusy)` };
    throw conflict(
      `runner ${name} is running a job on GitHub: cancel the job in GitHub first (the runner then leaves on its own), or add bypassBusy=true to delete it anyway`,
      'runner_busy',
    );
  }
  return { outcome };
}
