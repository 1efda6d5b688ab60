/**
 * The process-wide Prometheus registry. Every module registers its metrics here
 * so `GET /metrics` shows them all.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'runnerflow_process_' });

export const githubRateLimitRemaining = new Gauge({
  name: 'runnerflow_github_rate_limit_remaining',
  help: 'x-ratelimit-remaining of the last GitHub answer, per credentials and resource',
  labelNames: ['credentials', 'resource'],
  registers: [registry],
});

export const githubRequests = new Counter({
  name: 'runnerflow_github_requests_total',
  help: 'GitHub REST calls made, by operation and outcome',
  labelNames: ['operation', 'outcome'],
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: 'runnerflow_webhook_deliveries_total',
  help: 'GitHub webhook deliveries received, by event and result',
  labelNames: ['event', 'result'],
  registers: [registry],
});

export const webhookPreviousSecretDeliveries = new Counter({
  name: 'runnerflow_webhook_previous_secret_deliveries_total',
  help: 'GitHub webhook deliveries signed with api.previousWebhookSecret: while it rises, GitHub has not been given the new secret',
  registers: [registry],
});

export const providerOperations = new Histogram({
  name: 'runnerflow_provider_operation_seconds',
  help: 'Provider operation duration, by provider, operation and outcome',
  labelNames: ['provider', 'operation', 'outcome'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry],
});

export const sweepDeleted = new Counter({
  name: 'runnerflow_sweep_deleted_total',
  help: 'Machines deleted by the orphan sweep, by provider and reason',
  labelNames: ['provider', 'reason'],
  registers: [registry],
});

/*
 * Runner and job metrics an SLO can be built on. Labels are bounded: pool,
 * provider, status. Never a runner name or a job id.
 */
const LIFECYCLE_BUCKETS = [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200];

export const jobQueueSeconds = new Histogram({
  name: 'runnerflow_job_queue_seconds',
  help: 'Time a job waited from queued to started on one of the pool\'s runners (workflow_job started_at - created_at)',
  labelNames: ['pool'],
  buckets: [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600],
  registers: [registry],
});

export const runnerCreateSeconds = new Histogram({
  name: 'runnerflow_runner_create_seconds',
  help: 'Duration of one create attempt (GitHub credential + provider create), by outcome status ok|error',
  labelNames: ['pool', 'provider', 'status'],
  buckets: LIFECYCLE_BUCKETS,
  registers: [registry],
});

export const runnerBootstrapSeconds = new Histogram({
  name: 'runnerflow_runner_bootstrap_seconds',
  help: 'From the create request to the runner first reporting idle or taking a job (what the bootstrap timeout bounds)',
  labelNames: ['pool', 'provider'],
  buckets: LIFECYCLE_BUCKETS,
  registers: [registry],
});

export const runnerDeleteSeconds = new Histogram({
  name: 'runnerflow_runner_delete_seconds',
  help: 'Duration of one provider delete attempt, by outcome status ok|error',
  labelNames: ['pool', 'provider', 'status'],
  buckets: LIFECYCLE_BUCKETS,
  registers: [registry],
});

export const runnerForcedDeletes = new Counter({
  name: 'runnerflow_runner_forced_deletes_total',
  help: 'Runners ended by a forced delete (or a cancelled workflow)',
  labelNames: ['pool', 'provider'],
  registers: [registry],
});

export const scaleSetsLeft = new Counter({
  name: 'runnerflow_scale_sets_left_total',
  help: "Scale sets a deleted pool's listener left at GitHub: another session still held them when its wait ended, or GitHub could not be asked until then",
  labelNames: ['pool'],
  registers: [registry],
});

export const unheardRunnersAsked = new Counter({
  name: 'runnerflow_pool_unheard_runners_asked_total',
  help: 'Runners whose machine ran while their pool counted them as starting (a report given up), asked to report again',
  labelNames: ['pool'],
  registers: [registry],
});

export const runnerLeaks = new Counter({
  name: 'runnerflow_runner_leaked_total',
  help: 'Forced deletes the provider did not confirm: machines left for the sweep (RunnerLeaked)',
  labelNames: ['pool', 'provider'],
  registers: [registry],
});

export const sweepRuns = new Counter({
  name: 'runnerflow_sweep_runs_total',
  help: 'Sweep runs per provider, by status ok|error',
  labelNames: ['provider', 'status'],
  registers: [registry],
});

export const sweepMachines = new Counter({
  name: 'runnerflow_sweep_machines_total',
  help: 'Machines the sweep looked at, by what became of them: deleted|skipped|failed|owned',
  labelNames: ['provider', 'status'],
  registers: [registry],
});

export const sweepLostWebhookJobs = new Counter({
  name: 'runnerflow_sweep_lost_webhook_jobs_total',
  help: "Jobs the sweep found GitHub's webhooks had not told runnerflow of, by provider and webhook: queued (still queued at GitHub, unknown to every pool: routed again), in_progress_or_completed (run at GitHub while a pool still held it as queued: taken out)",
  labelNames: ['provider', 'webhook'],
  registers: [registry],
});

export const sweepLastRun = new Gauge({
  name: 'runnerflow_sweep_last_run_timestamp_seconds',
  help: 'When the sweep of a provider last completed (Unix time)',
  labelNames: ['provider'],
  registers: [registry],
});

export const livenessFindings = new Counter({
  name: 'runnerflow_liveness_findings_total',
  help: 'Runners the liveness passes told of something wrong, by provider, check (machines|github) and finding: machine_gone, machine_stopped, machine_error, runner_offline, runner_missing (the runner looks again before it leaves), pool_gone and not_counted (asked to leave: its pool no longer runs, or does not count it), pool_asked_to_look (a pool whose glance kept disagreeing with the runners listed for it, asked to look for runners that ended unreported), failed_call (a listing, query or signal that failed; the next pass tries again)',
  labelNames: ['provider', 'check', 'finding'],
  registers: [registry],
});

export const livenessLastRun = new Gauge({
  name: 'runnerflow_liveness_last_run_timestamp_seconds',
  help: 'When a liveness pass of a provider last completed, by check (Unix time)',
  labelNames: ['provider', 'check'],
  registers: [registry],
});

export const webhookRedeliveries = new Counter({
  name: 'runnerflow_webhook_redeliveries_total',
  help: 'What the redelivery schedule did, by credentials and outcome: redelivered (a failed delivery asked for again), given_up (an event lost for good), failed (a call to GitHub or Temporal failed; the next pass tries again)',
  labelNames: ['credentials', 'outcome'],
  registers: [registry],
});

export const webhookRedeliveryLastRun = new Gauge({
  name: 'runnerflow_webhook_redelivery_last_run_timestamp_seconds',
  help: 'When a redelivery pass over the credentials\' webhooks last completed (Unix time)',
  labelNames: ['credentials'],
  registers: [registry],
});
