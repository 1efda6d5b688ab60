/**
 * Signals come from webhooks, the API, scripts and people typing JSON into the
 * Web UI. A signal cannot answer with an error, so input that does not make
 * sense is logged and ignored instead of corrupting the instance's state.
 */
import { log } from '@temporalio/workflow';
import { HEALTH_FINDINGS, type HealthFinding } from '../domain/liveness';
import type { HealthReportArgs, JobCompletedArgs, JobStartedArgs, RunnerStatusArgs } from './messages';
import type { QueuedJob } from './pool-messages';

const REPORTABLE = ['installing', 'idle', 'failed'] as const;

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export function reasonOf(args: unknown, fallback: string): string {
  const reason = asObject(args).reason;
  return typeof reason === 'string' && reason.trim() !== '' ? reason.slice(0, 500) : fallback;
}

export function jobArgs<T extends JobStartedArgs | JobCompletedArgs>(signal: string, args: unknown): T | undefined {
  const jobId = asObject(args).jobId;
  if (typeof jobId === 'number' && Number.isSafeInteger(jobId) && jobId > 0) return args as T;
  log.warn(`ignored ${signal} signal: jobId must be a positive integer`, { got: JSON.stringify(args)?.slice(0, 200) });
  return undefined;
}

export function runnerStatusArgs(args: unknown): RunnerStatusArgs | undefined {
  const { status, message } = asObject(args);
  if (typeof status === 'string' && (REPORTABLE as readonly string[]).includes(status)) {
    return { status: status as RunnerStatusArgs['status'], ...(typeof message === 'string' ? { message: message.slice(0, 1000) } : {}) };
  }
  log.warn(`ignored runnerStatus signal: status must be one of ${REPORTABLE.join(', ')}`, { got: JSON.stringify(args)?.slice(0, 200) });
  return undefined;
}

export function healthReportArgs(args: unknown): HealthReportArgs | undefined {
  const { finding, detail } = asObject(args);
  if (typeof finding === 'string' && (HEALTH_FINDINGS as readonly string[]).includes(finding)) {
    return { finding: finding as HealthFinding, ...(typeof detail === 'string' ? { detail: detail.slice(0, 500) } : {}) };
  }
  log.warn(`ignored healthReport signal: finding must be one of ${HEALTH_FINDINGS.join(', ')}`, { got: JSON.stringify(args)?.slice(0, 200) });
  return undefined;
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
    const queuedAtOk = queuedAt === undefined || (typeof queuedAt === 'string' && Number.isFinite(Date.parse(queuedAt)));
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
