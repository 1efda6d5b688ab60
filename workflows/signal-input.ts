/**
 * Signals come from webhooks, the API, scripts and people typing JSON into the
 * Web UI. A signal cannot answer with an error, so input that does not make
 * sense is logged and ignored instead of corrupting the instance's state.
 */
import { log, setDefaultSignalHandler } from '@temporalio/workflow';
import { INSTANCE_STATUSES, RUNNER_STATUSES } from '../domain/instance-status';
import { SCALE_SET_NAME } from '../domain/scale-set';
import { HEALTH_FINDINGS, type HealthFinding } from '../domain/liveness';
import type { HealthReportArgs, JobCompletedArgs, JobStartedArgs, RunnerStatusArgs } from './messages';
import { isReadableTime, type JobProgressArgs, type QueuedJob, type RunnerChangedArgs } from './pool-messages';
import type { ScaleSetDemandArgs, UpdateListenerArgs } from './scale-set-messages';

const REPORTABLE = ['installing', 'idle', 'failed'] as const;

export function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

const isPositiveInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
export const ignored = (signal: string, why: string, args: unknown): undefined => {
  log.warn(`ignored ${signal} signal: ${why}`, { got: JSON.stringify(args)?.slice(0, 200) });
  return undefined;
};

export function reasonOf(args: unknown, fallback: string): string {
  const reason = asObject(args).reason;
  return typeof reason === 'string' && reason.trim() !== '' ? reason.slice(0, 500) : fallback;
}

export function jobArgs<T extends JobStartedArgs | JobCompletedArgs>(signal: string, args: unknown): T | undefined {
  if (isPositiveInt(asObject(args).jobId)) return args as T;
  return ignored(signal, 'jobId must be a positive integer', args);
}

export function runnerStatusArgs(args: unknown): RunnerStatusArgs | undefined {
  const { status, message } = asObject(args);
  if (typeof status === 'string' && (REPORTABLE as readonly string[]).includes(status)) {
    return { status: status as RunnerStatusArgs['status'], ...(typeof message === 'string' ? { message: message.slice(0, 1000) } : {}) };
  }
  return ignored('runnerStatus', `status must be one of ${REPORTABLE.join(', ')}`, args);
}

export function healthReportArgs(args: unknown): HealthReportArgs | undefined {
  const { finding, detail } = asObject(args);
  if (typeof finding === 'string' && (HEALTH_FINDINGS as readonly string[]).includes(finding)) {
    return { finding: finding as HealthFinding, ...(typeof detail === 'string' ? { detail: detail.slice(0, 500) } : {}) };
  }
  return ignored('healthReport', `finding must be one of ${HEALTH_FINDINGS.join(', ')}`, args);
}

/**
 * The jobs of a jobsQueued (or relayJobs) signal that make sense; the rest are
 * logged and dropped. A job without a usable id would poison the pool's queue
 * (it is keyed and carried by id).
 */
export function queuedJobsArgs(signal: string, jobs: unknown): QueuedJob[] {
  const list = Array.isArray(jobs) ? (jobs as unknown[]) : [];
  const valid: QueuedJob[] = [];
  let ignored = Array.isArray(jobs) ? 0 : 1;
  for (const item of list) {
    const { jobId, runId, labels, repository, queuedAt } = asObject(item);
    const labelsOk = labels === undefined || (Array.isArray(labels) && labels.every((l) => typeof l === 'string'));
    const queuedAtOk = queuedAt === undefined || isReadableTime(queuedAt);
    if (typeof jobId !== 'number' || !Number.isSafeInteger(jobId) || jobId <= 0 || !labelsOk || !queuedAtOk) {
      ignored += 1;
      continue;
    }
    // Other fields (an unmatched job's reason) travel on untouched.
    const job = { ...asObject(item), jobId, labels: (labels as string[] | undefined) ?? [] } as QueuedJob;
    if (typeof runId !== 'number' || !Number.isSafeInteger(runId)) delete job.runId;
    if (typeof repository !== 'string') delete job.repository;
    valid.push(job);
  }
  if (ignored > 0) {
    log.warn(`ignored ${ignored} job(s) of a ${signal} signal: each needs a positive integer jobId, string labels and an ISO queuedAt if any`, {
      got: JSON.stringify(jobs)?.slice(0, 200),
    });
  }
  return valid;
}

export function jobProgressArgs(args: unknown): JobProgressArgs | undefined {
  const { jobId, action, runnerName, repository } = asObject(args);
  if (!isPositiveInt(jobId) || (action !== 'in_progress' && action !== 'completed') || (runnerName !== undefined && typeof runnerName !== 'string')) {
    return ignored('jobProgress', 'needs a positive integer jobId, action in_progress or completed, and a string runnerName if any', args);
  }
  // A repository that is not a string is left out, not the job's progress with it: it only says where jobs come from.
  return { jobId, action, ...(typeof runnerName === 'string' ? { runnerName } : {}), ...(typeof repository === 'string' ? { repository } : {}) };
}

/** One runner's report; a batch is checked report by report, so one bad report loses only itself. */
export function runnerChangedArgs(args: unknown, signal = 'runnerChanged'): RunnerChangedArgs | undefined {
  const { name, seq, status, runnerStatus, jobId } = asObject(args);
  if (
    typeof name !== 'string' || name === '' || typeof seq !== 'number' || !Number.isFinite(seq) ||
    !(INSTANCE_STATUSES as readonly unknown[]).includes(status) || !(RUNNER_STATUSES as readonly unknown[]).includes(runnerStatus) ||
    (jobId !== undefined && !isPositiveInt(jobId))
  ) {
    return ignored(signal, 'a report needs a name, a numeric seq, a known status and runnerStatus, and a positive integer jobId if any', args);
  }
  return { name, seq, status: status as RunnerChangedArgs['status'], runnerStatus: runnerStatus as RunnerChangedArgs['runnerStatus'], ...(jobId !== undefined ? { jobId: jobId as number } : {}) };
}

export function runnerReportsArgs(args: unknown): RunnerChangedArgs[] {
  const reports = asObject(args).reports;
  if (!Array.isArray(reports)) return ignored('runnersChanged', 'reports must be a list', args) ?? [];
  return reports.flatMap((r: unknown) => runnerChangedArgs(r, 'runnersChanged') ?? []);
}

export function scaleSetDemandArgs(args: unknown): ScaleSetDemandArgs | undefined {
  const { scaleSetId, scaleSetName, totalAssignedJobs, seq, listener } = asObject(args);
  if (
    !isPositiveInt(scaleSetId) || typeof scaleSetName !== 'string' || !isCount(totalAssignedJobs) || typeof seq !== 'number' || !Number.isFinite(seq) ||
    (listener !== undefined && typeof listener !== 'string')
  ) {
    return ignored('scaleSetDemand', 'needs a positive integer scaleSetId, a scaleSetName, a count totalAssignedJobs, a numeric seq and a string listener if any', args);
  }
  return { scaleSetId, scaleSetName, totalAssignedJobs, seq, ...(typeof listener === 'string' ? { listener } : {}) };
}

export function listenerSettingsArgs(args: unknown): UpdateListenerArgs | undefined {
  const { minRunners, maxRunners, labels, runnerGroup, name } = asObject(args);
  if (!isCount(minRunners) || !isCount(maxRunners) || !Array.isArray(labels) || !labels.every((l) => typeof l === 'string')) {
    return ignored('updateListener', 'needs counts minRunners and maxRunners and a list of string labels', args);
  }
  // A blank group (a pool's settings sent by hand) is left out, not the whole signal: the pool would
  // send it with every later change too, and its listener would take none of them.
  const namesGroup = typeof runnerGroup === 'string' && runnerGroup.trim() !== '';
  if (runnerGroup !== undefined && !namesGroup) ignored('updateListener', 'runnerGroup, when given, must name a runner group; the rest is taken', args);
  // The same for a name GitHub would refuse (blank, or with spaces, as the pool's schema refuses it).
  const namesScaleSet = typeof name === 'string' && SCALE_SET_NAME.test(name);
  if (name !== undefined && !namesScaleSet) ignored('updateListener', 'name, when given, must be a scale set name without spaces; the rest is taken', args);
  return { minRunners, maxRunners, labels: labels as string[], ...(namesGroup ? { runnerGroup } : {}), ...(namesScaleSet ? { name } : {}) };
}

/**
 * A signal name the workflow has no handler for (`forcedelete` typed into the Web UI) is
 * accepted by the server and would sit unhandled without a word. It is logged instead, with
 * the names the workflow takes. Set after every handler, so signals that came before the
 * run's first task still reach theirs.
 */
export function warnOfUnknownSignals(workflowType: string, takes: readonly string[]): void {
  setDefaultSignalHandler((signal) => {
    log.warn('ignored a signal this workflow does not take', { workflowType, signal, takes: takes.join(', ') });
  });
}
