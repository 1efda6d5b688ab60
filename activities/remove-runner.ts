/**
 * The one way an activity unregisters a runner: scale-set runners through the
 * Actions service (the scale set owns their registration), the others through
 * GitHub's REST API. Busy and not-found are answers, not errors.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActionsServicePort } from '../github/actions/port';
import type { GitHubPort, GitHubScope, RemoveRunnerOutcome } from '../github/port';
import type { InstanceSpec } from '../workflows/messages';

export interface GitHubClients {
  get(credentials: string): GitHubPort;
  actions?(credentials: string, scope: GitHubScope): ActionsServicePort;
}

export interface RemoveRunnerArgs {
  github: InstanceSpec['github'];
  name: string;
  githubRunnerId?: number;
  /** The runner belongs to this scale set: it is removed through the Actions service. */
  scaleSetId?: number;
}

export function actionsClientFor(clients: GitHubClients, github: InstanceSpec['github']): ActionsServicePort {
  if (!clients.actions) throw ApplicationFailure.nonRetryable('this worker has no Actions-service client for runner scale sets', 'ScaleSetsNotConfigured');
  return clients.actions(github.credentials, github.scope);
}

export async function removeRunnerAtGitHub(clients: GitHubClients, args: RemoveRunnerArgs): Promise<RemoveRunnerOutcome> {
  if (args.scaleSetId !== undefined) {
    const actions = actionsClientFor(clients, args.github);
    const id = args.githubRunnerId ?? (await actions.findRunnerByName(args.name))?.id;
    return id === undefined ? 'not_found' : actions.removeRunner(id);
  }
  return clients.get(args.github.credentials).removeRunner({
    scope: args.github.scope,
    name: args.name,
    ...(args.githubRunnerId !== undefined ? { runnerId: args.githubRunnerId } : {}),
  });
}

/**
 * Whether GitHub says the runner of a workflow that has ended is running a job: its machine is
 * then still at work, whatever the workflow's end says. Throws when GitHub cannot answer.
 */
export async function githubCallsBusy(clients: Pick<GitHubClients, 'get'>, github: InstanceSpec['github'], name: string): Promise<boolean> {
  return (await clients.get(github.credentials).findRunnerByName(github.scope, name))?.busy === true;
}
