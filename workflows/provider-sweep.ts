/**
 * providerSweep: one sweep of one provider's machines, started by the schedule
 * `sweep/<provider>` (or by hand). All the work is one activity; the workflow
 * exists so each run, its report and its failures are visible in the Web UI.
 * With `githubRunners`, a second activity does the same for GitHub registrations.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { GitHubSweepActivities } from '../activities/github-sweep-activities';
import type { SweepActivities, SweepArgs, SweepReport } from '../activities/sweep-activities';
import { FAILURE_TYPES } from '../domain/failure-types';

export const PROVIDER_SWEEP_WORKFLOW = 'providerSweep';

const { sweepProvider, sweepGitHubRunners } = proxyActivities<SweepActivities & GitHubSweepActivities>({
  // Generous: a provider with many orphans deletes them one by one. Heartbeats catch a lost worker sooner.
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  // A provider that is down now is tried again by the next scheduled run; a few retries cover blips.
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 3, nonRetryableErrorTypes: [FAILURE_TYPES.unknownProvider, 'InvalidSweepArgs'] },
});

export async function providerSweep(input: SweepArgs): Promise<SweepReport> {
  const machines = await sweepProvider(input);
  if (!input.githubRunners) return machines;
  // A scheduled run is given the last completed run's report: the look for lost jobs goes on
  // round the queued runs where that one stopped, whichever worker runs this one.
  // So do the clocks of registrations found with no workflow: each is removed a grace period after the first finding.
  const last = (workflowInfo().lastResult as SweepReport | undefined)?.github;
  const lostJobRotation = last?.lostJobRotation;
  const untrackedSince = last?.untrackedSince;
  // And the round of the organisations' repositories.
  const repositoryRound = last?.repositoryRound;
  // And what GitHub refused (a repository gone, or not the credentials' to read): left alone a while, not asked every sweep.
  const unreadable = last?.unreadable;
  const github = await sweepGitHubRunners({
    provider: input.provider,
    gracePeriodMs: input.gracePeriodMs,
    ...(input.lostJobAgeMs !== undefined ? { lostJobAgeMs: input.lostJobAgeMs } : {}),
    ...(input.lostJobRepositories !== undefined ? { lostJobRepositories: input.lostJobRepositories } : {}),
    ...(input.lostJobRound !== undefined ? { lostJobRound: input.lostJobRound } : {}),
    ...(lostJobRotation ? { lostJobRotation } : {}),
    ...(repositoryRound ? { repositoryRound } : {}),
    ...(untrackedSince ? { untrackedSince } : {}),
    ...(unreadable ? { unreadable } : {}),
  });
  return { ...machines, github };
}
