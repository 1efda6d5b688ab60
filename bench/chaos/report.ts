import { ms, printTable, type Figure } from '../common';
import type { ChaosReport } from './campaign';

const list = (items: readonly (string | number)[]): string => (items.length === 0 ? '0' : `${items.length} (${items.slice(0, 3).join(', ')}${items.length > 3 ? ', …' : ''})`);

/** The campaign's figures against its targets, then what was injected. */
export function printChaosReport(report: ChaosReport): number {
  const { outcome, injected } = report;
  const figures: Figure[] = [
    { figure: 'jobs run (got a runner and finished)', value: `${outcome.jobsRun}/${outcome.jobs}`, target: 'every job', met: outcome.jobsRun === outcome.jobs && outcome.jobs === report.lifecycles },
    { figure: 'jobs succeeded (others: machine killed mid-job)', value: `${outcome.jobsSucceeded}/${outcome.jobs}` },
    { figure: 'machines leaked (no live workflow)', value: list(outcome.leakedMachines), target: '0', met: outcome.leakedMachines.length === 0 },
    { figure: 'duplicate machines per runner name', value: list(outcome.duplicateMachines), target: '0', met: outcome.duplicateMachines.length === 0 },
    { figure: 'runners still registered at GitHub', value: list(outcome.registeredRunners), target: '0', met: outcome.registeredRunners.length === 0 },
    { figure: 'workflows still open (stuck)', value: list(outcome.openWorkflows), target: '0', met: outcome.openWorkflows.length === 0 },
    ...(report.mode === 'scaleSet' ? [{ figure: 'scale sets left at GitHub after the pool was deleted', value: String(report.scaleSetsLeft), target: '0', met: report.scaleSetsLeft === 0 }] : []),
    { figure: 'worst queue-to-start time', value: ms(outcome.worstQueueToStartMs) },
    { figure: 'worker SIGKILLs', value: String(injected.workerKills) },
    { figure: 'API SIGKILLs', value: String(injected.apiKills) },
    { figure: 'Temporal server restarts', value: `${injected.temporalRestarts}${injected.temporalDownMs !== undefined ? ` (down ${ms(injected.temporalDownMs)})` : ''}` },
    { figure: 'machines killed', value: String(injected.machineKills) },
    { figure: 'GitHub faults injected', value: Object.entries(injected.githubFaults).map(([k, n]) => `${k} ${n}`).join(', ') || '0' },
    { figure: 'provider create / delete failures', value: `${injected.providerCreateFaults} / ${injected.providerDeleteFaults}` },
    { figure: 'of those, done and then answered as failed', value: String(injected.providerAnswersLost) },
    { figure: 'provider deletes that hung', value: String(injected.providerDeleteHangs) },
    { figure: 'runners reset after they left (each must leave again)', value: String(injected.runnerResets) },
    ...(report.mode === 'scaleSet' ? [{ figure: 'scale-set listener terminated (its pool starts it again)', value: String(injected.listenerTerminations) }] : []),
    { figure: 'runners asked to leave as not counted by their pool', value: list(report.uncounted.asked) },
    { figure: 'of those, runners not reset (false alarms)', value: list(report.uncounted.notReset), target: '0', met: report.uncounted.notReset.length === 0 },
    { figure: 'jobs GitHub had run, taken out of the pool\'s queue by the sweep', value: String(report.settledJobs.takenOut) },
    { figure: 'jobs GitHub had run, still queued in the pool when it was deleted', value: list(report.settledJobs.stillHeld), target: '0', met: report.settledJobs.stillHeld.length === 0 },
    { figure: 'pools reset, stuck on a nondeterminism error', value: String(report.poolsReset) },
    { figure: 'runner workflows ended, stuck on a nondeterminism error', value: String(report.stuckRunnersEnded) },
    {
      figure: 'pool asked to look for itself by the machine pass',
      value: report.poolLooksAsked.length === 0 ? '0' : `${report.poolLooksAsked.length} (${[...new Set(report.poolLooksAsked)].slice(0, 3).join('; ')})`,
    },
    { figure: 'webhooks lost / duplicated / overtaken by their job\'s later events', value: `${injected.webhooksLost} / ${injected.webhooksDuplicated} / ${injected.webhooksDelayed}` },
    { figure: 'jobs whose start and end webhooks were both lost', value: String(injected.jobsSilenced) },
    {
      figure: 'failed webhook deliveries answered later (runnerflow asked again)',
      value: `${injected.failedDeliveriesAnswered}/${injected.failedDeliveries}`,
      target: 'every one',
      met: injected.failedDeliveriesAnswered === injected.failedDeliveries,
    },
    { figure: 'GitHub API calls (of the hourly limit)', value: `${report.github.apiCalls} (of ${report.github.hourlyLimit}); ${report.github.callsDuringPrimaryRateLimit} sent while limited` },
    { figure: 'GitHub API calls by operation', value: Object.entries(report.github.byOperation).sort((a, b) => b[1] - a[1]).map(([op, n]) => `${op} ${n}`).join(', ') },
    { figure: 'elapsed', value: `${Math.round(report.elapsedMs / 1000)} s` },
  ];
  const kind =
    (report.mode !== 'scaleSet' ? '' : report.scaleSetAssignment === 'broker' ? ' (scale set, jobs assigned by the broker)' : ' (scale set)') +
    (report.scope === 'enterprise' ? ' (an enterprise pool, jobs from two organisations)' : report.scope === 'org' ? ' (an organisation pool, jobs from three repositories)' : '');
  return printTable(`chaos campaign${kind}, seed ${report.seed}, ${report.lifecycles} lifecycles`, figures);
}
