/**
 * The chaos campaign: ephemeral job lifecycles on simulated machines while a
 * seeded driver breaks things: SIGKILLs and restarts the worker process,
 * restarts the Temporal server once (when the caller can), makes provider
 * creates and deletes fail (and some deletes hang; in some spells a failure
 * comes after the machine was made or deleted, its answer lost), loses and duplicates
 * webhooks, answers GitHub calls with 5xx and a secondary rate limit, resets
 * a few runners that have already left as an operator might (each runs again,
 * with a machine its pool has written off), and (optionally) kills machines
 * under their runners. The API process is SIGKILLed and started again too:
 * deliveries and callbacks in flight fail, and what it held in memory (recent
 * delivery ids, batches not yet signalled, held idle reports) is gone. Then it
 * lets the system settle, deletes the pool and measures what is left.
 *
 * In scale-set mode the pool is a runner scale set: jobs reach it through the
 * Actions service's message queue, not webhooks, so the GitHub faults are the
 * Actions service's (sessions taken by another listener or lost, tokens that
 * expire, messages delivered twice, job offers lost, foreign messages, 5xx);
 * the rest of the weather is the same. The scale set must be gone from GitHub
 * once its pool is.
 */
import { randomUUID } from 'node:crypto';
import proto from '@temporalio/proto';
import { measureOutcome, type RunOutcome } from '../../devstack/outcome';
import { processStackRequest, startProcessStack, type ProcessStack } from '../../devstack/process-stack';
import type { StackProcess } from '../../devstack/processes/spawn';
import type { SimFault } from '../../github/simulator/faults';
import type { ScaleSetAssignment } from '../../github/simulator/scale-sets';
import type { SentDelivery } from '../../github/simulator/webhook-sender';
import type { LivenessReport } from '../../activities/liveness-activities';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import { redeliveryScheduleId } from '../../worker/redelivery-schedule';
import { LIVENESS_CHECK_WORKFLOW } from '../../workflows/liveness-check';
import { PROVIDER_SWEEP_WORKFLOW } from '../../workflows/provider-sweep';
import type { SweepReport } from '../../activities/sweep-activities';
import { sweepScheduleId } from '../../worker/sweep-schedule';
import type { PoolSettingsInput } from '../../domain/pool';
import { stateQuery } from '../../workflows/messages';
import { poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { scaleSetListenerId, scaleSetStateQuery } from '../../workflows/scale-set-messages';
import { sleep, stopOnInterrupt, until, uniqueName } from '../common';
import { SeededRandom } from './random';

export interface ChaosOptions {
  temporalAddress: string;
  /** `webhook` (the default): jobs come as webhooks. `scaleSet`: the pool is a runner scale set. */
  mode?: ChaosMode;
  /** Scale sets: jobs offered to acquire (the default), or assigned by GitHub's broker with no offer. */
  scaleSetAssignment?: ScaleSetAssignment;
  /**
   * `repo` (the default): the pool serves one repository. `org`: it serves an organisation, whose
   * jobs come from three of its repositories through the organisation's webhook. `enterprise`: it
   * serves an enterprise, whose jobs come from repositories of two organisations; its token's
   * webhooks are those organisations'.
   */
  scope?: ChaosScope;
  lifecycles: number;
  seed: number;
  /** Stops the Temporal server, waits `downMs`, and starts it on the same database; without it the restart step is skipped. */
  restartTemporal?: (downMs: number) => Promise<void>;
  /** Kill machines under idle and busy runners (needs the instances' liveness checks to converge). */
  killMachines: boolean;
  /**
   * The pools' own looks at their production backstop (hourly) instead of campaign speed: a runner
   * that ended unreported, or a terminated listener, is then found only because the liveness
   * machine pass asks its pool to look (`auditPool`).
   */
  looksAsked?: boolean;
  /** Provider create and delete failure rate (0.3 by default). */
  providerFailureRate?: number;
  /**
   * Worker and API processes (1 each by default). With more, one at a time is killed while the
   * others go on, as in an installation that runs several against one Temporal cluster.
   */
  workers?: number;
  apis?: number;
  workflowBundlePath?: string;
  /** The whole campaign, settling included, ends within this. */
  timeLimitMs: number;
  log: (message: string) => void;
}

export type ChaosMode = 'webhook' | 'scaleSet';

export interface ChaosReport {
  seed: number;
  mode: ChaosMode;
  /** Scale-set mode: how its jobs reached the scale set. */
  scaleSetAssignment?: ScaleSetAssignment;
  scope: ChaosScope;
  /** Scale sets of the campaign's pool still at GitHub after the pool was deleted (scale-set mode). */
  scaleSetsLeft: number;
  lifecycles: number;
  elapsedMs: number;
  injected: {
    workerKills: number;
    /** The API process SIGKILLed and started again on its address. */
    apiKills: number;
    temporalRestarts: number | 'skipped';
    /** How long the server stayed down in its restart. */
    temporalDownMs?: number;
    machineKills: number;
    githubFaults: Partial<Record<SimFault['kind'], number>>;
    providerCreateFaults: number;
    providerDeleteFaults: number;
    /** Of those, failures that came after the create or delete took effect: the provider did it and said it failed. */
    providerAnswersLost: number;
    providerDeleteHangs: number;
    webhooksLost: number;
    /** Jobs whose `in_progress` and every later event were lost: nobody tells the pool they were taken. */
    jobsSilenced: number;
    webhooksDuplicated: number;
    /** Deliveries held back so that their job's later events overtook them. */
    webhooksDelayed: number;
    /** Webhook deliveries that failed (the API could not hand them to Temporal while it restarted, say). */
    failedDeliveries: number;
    /** Of those, answered later: runnerflow asked GitHub for them again. */
    failedDeliveriesAnswered: number;
    /** Runners that had left, reset by "an operator" to run again. */
    runnerResets: number;
    /** Scale-set mode: the pool's listener terminated by "an operator" (its pool's look starts it again). */
    listenerTerminations: number | 'skipped';
  };
  /** Runners the liveness checks asked to leave because their pool did not count them: the reset ones, and no other. */
  uncounted: { asked: string[]; notReset: string[] };
  /** Pools the liveness passes reset, and runner workflows they ended, stuck on a nondeterminism error. */
  poolsReset: number;
  stuckRunnersEnded: number;
  /** Why the machine passes asked the pool to look for itself, once per ask (activities/pool-look-requests.ts). */
  poolLooksAsked: string[];
  /** Jobs GitHub had run that the pool still held as queued: taken out by the sweeps, and still held when the pool was deleted. */
  settledJobs: { takenOut: number; stillHeld: number[] };
  /** GitHub API calls the campaign cost, against the simulated installation's hourly limit. */
  github: { apiCalls: number; hourlyLimit: number; callsDuringPrimaryRateLimit: number; byOperation: Record<string, number> };
  outcome: RunOutcome;
}

const LABEL = 'chaos';
const providerFailureRate = (options: ChaosOptions): number => options.providerFailureRate ?? 0.3;
/**
 * The simulated installation's primary limit: GitHub Enterprise Cloud's 15,000 calls an hour.
 * The campaign sweeps every 5 s and checks liveness at GitHub every 3 s, so the 1,000
 * lifecycles of --full cost about 5,000 calls in some eleven minutes: more than the
 * simulator's default 5,000 an hour, after which the runners left would rightly wait most of
 * an hour for the window to reset.
 */
const GITHUB_HOURLY_LIMIT = 15_000;
const TIMINGS = {
  createInitialInterval: 200,
  createMaxInterval: 1_000,
  createAttemptTimeout: 10_000,
  deleteInitialInterval: 200,
  deleteMaxInterval: 1_000,
  deleteAttemptTimeout: 2_000,
  githubInitialInterval: 200,
  githubMaxInterval: 2_000,
  githubAttemptTimeout: 5_000,
  forceDeleteAttemptTimeout: 500,
  busyRetryInterval: 500,
  heartbeatTimeout: 2_000,
  poolCreateBackoffInitial: 500,
  poolCreateBackoffMax: 2_000,
  busyRunnerLostGrace: 3_000,
  runnerOfflineGrace: 2_000,
  leaveReaskInterval: 5_000,
  // A scale set's job whose offer was lost is found in the statistics and listed at campaign speed.
  scaleSetWaitingJobsInterval: 5_000,
  // A pool's look at campaign speed: a runner that ended unreported, or a terminated scale-set listener, is found within seconds.
  poolAuditInterval: 5_000,
  // A session refused with a 409 is asked for again at campaign speed. At the default 30 s, each
  // injected conflict lies in wait for the next ask (the ask is rare, the fault outlives the
  // wait), and a campaign whose jobs fell behind met one at ask after ask: its last jobs waited
  // minutes for a session while the weather went on.
  scaleSetConflictRetry: 3_000,
};
/** The campaign's timings with the pools' own looks left at their default: hourly while the liveness passes run. */
function timingsWithoutOwnLooks(): Omit<typeof TIMINGS, 'poolAuditInterval'> {
  const { poolAuditInterval: _ownLooks, ...rest } = TIMINGS;
  return rest;
}
/**
 * Liveness passes at campaign speed: a killed machine or a lost `completed` webhook is noticed within
 * seconds, and a pool stuck on a nondeterminism error is reset while the campaign's jobs still wait for it.
 */
const LIVENESS = { interval: '2s', githubInterval: '3s', jitter: '500ms', stuckPoolAfter: '3s' };
/** Failed deliveries asked for again within seconds, so those of the server's restart are back while jobs still run. */
const REDELIVERY = { interval: '2s', hookRefresh: '10s', firstDelay: '2s', maxDelay: '8s', maxAttempts: 8 };
/** Longer than all of a failed delivery's redeliveries take: eight on a 2 s to 8 s backoff, 54 s in all. */
const REDELIVERY_WAIT_MS = 60_000;
/** Longer than a settled job takes to be looked up: `sweep.lostJobAge` (15 s) and two sweeps (every 5 s). */
const SETTLED_WAIT_MS = 45_000;
/** Runners reset after they left, at most: a few are enough to show each one leaves again. */
const MAX_RUNNER_RESETS = 3;
/** How long GitHub keeps a job busy after its runner's machine died before it fails it. */
const JOB_GIVE_UP_MS = 4_000;

/** The Actions service's own faults, which scale-set mode injects instead of webhook faults. */
export const ACTIONS_SERVICE_FAULTS = ['session-conflict', 'expire-token', 'lose-session', 'redeliver-message', 'session-expired-on-delete', 'lose-job-offer', 'foreign-message'] as const;

/**
 * How long an injected GitHub fault waits for the requests it was given. A fault that only a rare
 * request meets (a session's creation, retried every 30 s while another listener holds the scale set)
 * would otherwise pile up behind the next ones: at the driver's rate, conflicts were added about as
 * fast as the retries used them, and one 1,000-job run in scale-set mode stayed in `conflict` for
 * 17 minutes, a trouble no service keeps up for that long.
 */
const FAULT_LIFETIME_MS = 30_000;

export const WEBHOOK_FAULTS = ['lose-webhooks', 'duplicate-webhooks', 'unreachable-webhooks', 'delay-webhooks'] as const;

/** The GitHub faults only the mode meets: the Actions service's in scale-set mode, the webhooks' otherwise. */
const ownFaults = (mode: ChaosMode): typeof ACTIONS_SERVICE_FAULTS | typeof WEBHOOK_FAULTS => (mode === 'scaleSet' ? ACTIONS_SERVICE_FAULTS : WEBHOOK_FAULTS);

/**
 * GitHub faults the driver picks from; each lasts a few requests or deliveries, at most
 * FAULT_LIFETIME_MS. `ownOnly`: only the mode's own (`ownFaults`), not what both modes meet.
 */
function githubFault(random: SeededRandom, mode: ChaosMode, ownOnly = false): SimFault {
  const own = ownFaults(mode);
  const kind = random.pick([...(ownOnly ? [] : (['server-error', 'secondary-rate-limit', 'latency'] as const)), ...own]);
  switch (kind) {
    case 'server-error':
      return { kind, status: random.pick([500, 502, 503] as const), operation: '*', times: random.int(1, 4) };
    case 'secondary-rate-limit':
      return { kind, retryAfterSeconds: random.int(1, 2), operation: '*', times: random.int(1, 3) };
    case 'latency':
      // Some slower than runnerflow's attempt timeout (5 s here): the call is given up, and GitHub
      // still does what it asked (registers the runner, deletes it), its answer lost.
      return { kind, ms: random.int(1_000, 8_000), operation: '*', times: random.int(1, 5) };
    case 'lose-webhooks': {
      const action = random.pick(['queued', 'in_progress', 'completed'] as const);
      // Sometimes a job's start and end both: nobody tells its pool it was taken, until the sweep looks it up.
      return { kind, action, times: 1, ...(action === 'in_progress' && random.chance(0.5) ? { restOfJob: true } : {}) };
    }
    case 'duplicate-webhooks':
      return { kind, times: random.int(1, 3) };
    case 'unreachable-webhooks':
      // The API out of reach for a few deliveries: GitHub keeps them failed until runnerflow asks for them again.
      return { kind, times: random.int(1, 4) };
    case 'delay-webhooks':
      // Overtaken by the job's later events: a `queued` after its job started, an `in_progress` after it completed.
      return { kind, action: random.pick(['queued', 'in_progress', 'completed'] as const), ms: random.int(500, 5_000), times: random.int(1, 3) };
    case 'expire-token':
      return { kind, operation: '*', times: random.int(1, 2) };
    case 'session-conflict':
    case 'lose-session':
    case 'redeliver-message':
    case 'session-expired-on-delete':
    case 'lose-job-offer':
    case 'foreign-message':
      return { kind, times: random.int(1, 2) };
  }
}

export type ChaosScope = 'repo' | 'org' | 'enterprise';
const POOL_SCOPES: Record<ChaosScope, PoolSettingsInput['github']['scope']> = {
  repo: { kind: 'repo', owner: 'chaos', repo: 'app' },
  org: { kind: 'org', org: 'chaos-org' },
  enterprise: { kind: 'enterprise', enterprise: 'chaos-ent' },
};
/** Where the campaign's jobs are queued: an organisation's or an enterprise's come from several repositories. */
const JOB_REPOSITORIES: Record<ChaosScope, readonly string[]> = {
  repo: ['chaos/app'],
  org: ['chaos-org/app', 'chaos-org/api', 'chaos-org/web'],
  enterprise: ['chaos-ent-a/app', 'chaos-ent-b/api'],
};

export async function runChaosCampaign(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const mode = options.mode ?? 'webhook';
  const deadline = started + options.timeLimitMs;
  const random = new SeededRandom(options.seed);
  const log = options.log;
  const taskQueue = uniqueName('chaos-tq');
  const provider = uniqueName('chaos-machines');
  const failureRate = providerFailureRate(options);
  const injected: ChaosReport['injected'] = {
    workerKills: 0,
    apiKills: 0,
    temporalRestarts: options.restartTemporal ? 0 : 'skipped',
    machineKills: 0,
    githubFaults: {},
    providerCreateFaults: 0,
    providerDeleteFaults: 0,
    providerAnswersLost: 0,
    providerDeleteHangs: 0,
    webhooksLost: 0,
    jobsSilenced: 0,
    webhooksDuplicated: 0,
    webhooksDelayed: 0,
    failedDeliveries: 0,
    failedDeliveriesAnswered: 0,
    runnerResets: 0,
    listenerTerminations: mode === 'scaleSet' ? 0 : 'skipped',
  };
  // Credentials of the campaign's own: their redelivery schedule is per credentials name, and the suite's server is shared.
  const credentials = uniqueName('chaos-token').toLowerCase();

  const stack = stopOnInterrupt(
    await startProcessStack({
      temporalAddress: options.temporalAddress,
      taskQueue,
      workers: options.workers ?? 1,
      apis: options.apis ?? 1,
      ...(options.workflowBundlePath ? { workflowBundlePath: options.workflowBundlePath } : {}),
      // A provider name of its own: sweep and liveness schedules are per provider, and the suite's server is shared.
      simulatedProvider: provider,
      githubTokenCredentials: credentials,
      config: { timings: options.looksAsked ? timingsWithoutOwnLooks() : TIMINGS, controllerId: uniqueName('chaos-ctl'), sweep: { interval: '5s', gracePeriod: '10s', lostJobAge: '15s' }, liveness: LIVENESS, redelivery: REDELIVERY },
      // A session nobody polls lapses at campaign speed: the terminated listener's blocks its successor for 20 s, not 2 minutes.
      simulator: { jobDurationMs: 500, webhookConcurrency: 8, rateLimit: GITHUB_HOURLY_LIMIT, sessionIdleTimeoutMs: 20_000 },
    }),
  );
  const jobIds = new Set<number>();
  try {
    const name = uniqueName('chaos').toLowerCase().slice(0, 40);
    const pool: PoolSettingsInput = {
      name,
      github: { credentials, scope: POOL_SCOPES[options.scope ?? 'repo'] },
      labels: ['self-hosted', 'linux', LABEL],
      provider,
      ...(mode === 'scaleSet'
        ? // Runners kept without a job take offers whose message was lost; the scale set's statistics ask for the rest.
          { mode: 'scaleSet' as const, scaleSet: { minRunners: 2 } }
        : // Idle runners take jobs whose `queued` webhook was lost, as they would on GitHub.
          { minIdleRunners: 2 }),
      maxRunners: 12,
      bootstrapTimeout: '30s',
      idleTimeout: '60s',
    };
    // A scale set's jobs name the scale set in `runs-on`.
    const jobLabels = mode === 'scaleSet' ? [name] : [LABEL];
    const created = await processStackRequest(stack, 'POST', '/api/v1/pools', pool);
    if (created.status !== 201) throw new Error(`chaos pool not created (${created.status}): ${JSON.stringify(created.body)}`);
    if (mode === 'scaleSet') {
      const listening = await until(async () => {
        const view = await stack.client.workflow.getHandle(scaleSetListenerId(name)).query(scaleSetStateQuery).catch(() => undefined);
        return view?.status === 'listening' ? true : undefined;
      }, Math.max(0, Math.min(60_000, deadline - Date.now())), 200);
      if (!listening) throw new Error('the chaos scale set listener never listened');
    }
    setProviderFaults(stack, options.seed, failureRate, false);
    if (mode === 'scaleSet' && options.scaleSetAssignment) stack.sim.setScaleSetAssignment(options.scaleSetAssignment);
    log(`chaos: ${mode === 'scaleSet' ? `scale-set pool (jobs ${options.scaleSetAssignment === 'broker' ? 'assigned by the broker' : 'offered to acquire'})` : 'pool'} ${pool.name}, seed ${options.seed}, ${options.lifecycles} lifecycles, provider failure rate ${failureRate}`);

    const driver = new ChaosDriver(stack, taskQueue, random, options, injected, mode, name);
    const repositories = JOB_REPOSITORIES[options.scope ?? 'repo'];
    const queueing = (async () => {
      for (let i = 0; i < options.lifecycles && Date.now() < deadline; i++) {
        jobIds.add(stack.sim.queueJob({ repository: repositories[i % repositories.length]!, labels: jobLabels, durationMs: random.int(200, 1_500) }).id);
        await sleep(random.int(10, 120));
      }
    })();
    const done = () => completedJobs(stack, jobIds) >= options.lifecycles;
    // Chaos while jobs are queued and until most have run; the last ones run in calm weather.
    // At least one worker kill lands while jobs are in flight, however fast the machine runs them.
    const progress = () => completedJobs(stack, jobIds) / options.lifecycles;
    await driver.run(() => Date.now() > deadline || (jobIds.size >= options.lifecycles && progress() >= 0.9 && injected.workerKills > 0 && injected.apiKills > 0), progress);
    await queueing;
    stack.sim.clearFaults();
    stack.machines.clearFaults();
    await driver.ensureRunning();
    log(`chaos: faults stopped after ${Math.round((Date.now() - started) / 1000)} s; ${completedJobs(stack, jobIds)}/${jobIds.size} jobs done`);

    const since = () => `${Math.round((Date.now() - started) / 1000)} s`;
    await until(() => (done() ? true : undefined), Math.max(0, deadline - Date.now() - 60_000), 500);
    log(`chaos: ${completedJobs(stack, jobIds)}/${jobIds.size} jobs done after ${since()}`);
    const at = (iso: string | undefined) => (iso ? `${((Date.parse(iso) - started) / 1000).toFixed(1)} s` : '-');
    const waited = (j: { createdAt: string; startedAt?: string }) => Date.parse(j.startedAt!) - Date.parse(j.createdAt);
    const slowest = stack.sim
      .jobs()
      .filter((j) => jobIds.has(j.id) && j.startedAt)
      .sort((a, b) => waited(b) - waited(a))
      .slice(0, 3);
    for (const j of slowest) log(`chaos: slow job ${j.id}: queued ${at(j.createdAt)}${mode === 'scaleSet' ? `, acquired ${at(j.acquiredAt)}` : ''}, started ${at(j.startedAt)} on ${j.runnerName ?? '-'}`);
    // A failed delivery is asked for again on a backoff of up to REDELIVERY.maxDelay. The pool goes only
    // once they all have been: the pass follows the webhooks of the credentials' pools, so a deleted
    // pool's webhook (and what failed on it) is no longer followed, as it should not be.
    await until(() => (unansweredDeliveries(stack.sim.deliveries()).length === 0 ? true : undefined), Math.max(0, Math.min(REDELIVERY_WAIT_MS, deadline - Date.now() - 60_000)), 500);
    for (const d of unansweredDeliveries(stack.sim.deliveries())) log(`chaos: failed delivery not answered: ${d.id} ${d.event}.${d.action}, attempts ${d.statuses.join(', ')}`);
    // A job whose start and end were both lost stays queued in the pool until a sweep looks it up at GitHub.
    const settledHeld = async (): Promise<number[]> => {
      if (mode === 'scaleSet') return [];
      const view = await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery).catch(() => undefined);
      const status = new Map(stack.sim.jobs().map((j) => [j.id, j.status]));
      return (view?.queuedJobs ?? []).filter((j) => status.get(j.jobId) !== 'queued').map((j) => j.jobId);
    };
    await until(async () => ((await settledHeld()).length === 0 ? true : undefined), Math.max(0, Math.min(SETTLED_WAIT_MS, deadline - Date.now() - 60_000)), 1_000);
    const stillHeld = await settledHeld();
    if (stillHeld.length > 0) {
      log(`chaos: jobs GitHub has run still queued in the pool: ${stillHeld.join(', ')}`);
      // What the sweeps, which take such jobs out, were doing meanwhile.
      for (const line of await recentSweeps(stack, provider, Date.now() - SETTLED_WAIT_MS)) log(`chaos: ${line}`);
    }
    const deleted = await processStackRequest(stack, 'DELETE', `/api/v1/pools/${pool.name}`);
    if (deleted.status >= 300) log(`chaos: pool delete answered ${deleted.status}`);
    await until(async () => ((await stack.client.workflow.getHandle(poolWorkflowId(pool.name)).describe()).status.name === 'RUNNING' ? undefined : true), Math.max(0, deadline - Date.now()), 500);
    log(`chaos: pool deleted after ${since()}`);
    // The sweep needs a grace period and a round to collect machines a forced delete could not remove.
    const scaleSetsLeft = () => stack.sim.scaleSets().filter((set) => set.name === name).length;
    await until(async () => {
      const o = await measureOutcome({ client: stack.client, taskQueue, sim: stack.sim, machines: stack.machines, jobIds });
      return o.openWorkflows.length === 0 && o.leakedMachines.length === 0 && o.registeredRunners.length === 0 && scaleSetsLeft() === 0 ? true : undefined;
    }, Math.max(0, deadline - Date.now()), 1_000);
    log(`chaos: settled after ${since()}`);

    const calls = stack.machines.calls();
    injected.providerCreateFaults = calls.filter((c) => c.op === 'create' && c.outcome === 'fault').length;
    injected.providerDeleteFaults = calls.filter((c) => c.op === 'delete' && c.outcome === 'fault').length;
    injected.providerAnswersLost = calls.filter((c) => c.outcome === 'fault' && c.message?.endsWith(ANSWER_LOST)).length;
    injected.providerDeleteHangs = calls.filter((c) => c.op === 'delete' && c.outcome === 'timeout').length;
    const simStats = stack.sim.stats();
    injected.webhooksLost = simStats.webhooks.lost;
    injected.jobsSilenced = simStats.webhooks.jobsSilenced;
    injected.webhooksDuplicated = simStats.webhooks.duplicated;
    injected.webhooksDelayed = simStats.webhooks.delayed;
    Object.assign(injected, failedDeliveries(stack.sim.deliveries()));
    const github = { apiCalls: simStats.totalApiCalls, hourlyLimit: GITHUB_HOURLY_LIMIT, callsDuringPrimaryRateLimit: simStats.callsDuringPrimaryRateLimit, byOperation: { ...simStats.callsByOperation } };
    const measured = await measureOutcome({ client: stack.client, taskQueue, sim: stack.sim, machines: stack.machines, jobIds });
    const outcome = { ...measured, duplicateMachines: measured.duplicateMachines.filter((name) => !driver.vanished.has(name) && !driver.resets.has(name)) };
    for (const id of outcome.openWorkflows) log(`chaos: still open: ${await describeOpen(stack, id)}`);
    const { asked, poolsReset, stuckRunnersEnded, poolLooksAsked } = await livenessOutcomes(stack, provider);
    const uncounted = { asked, notReset: asked.filter((name) => !driver.resets.has(name)) };
    const settledJobs = { takenOut: await settledJobsTakenOut(stack, provider), stillHeld };
    return { seed: options.seed, mode, scope: options.scope ?? 'repo', ...(mode === 'scaleSet' ? { scaleSetAssignment: options.scaleSetAssignment ?? 'acquire' } : {}), scaleSetsLeft: scaleSetsLeft(), lifecycles: options.lifecycles, elapsedMs: Date.now() - started, injected, uncounted, poolsReset, stuckRunnersEnded, poolLooksAsked, settledJobs, github, outcome };
  } finally {
    // The schedule lives in the server, not in the stack; deleted while the stack's connection is open.
    await stack.client.schedule.getHandle(redeliveryScheduleId(credentials)).delete().catch(() => undefined);
    await stack.stop();
  }
}

interface FailedDelivery {
  id: string;
  event: string;
  action: string;
  /** Every attempt's outcome, in order. */
  statuses: SentDelivery['status'][];
  answered: boolean;
}

/** Deliveries with a failed attempt, each with its attempts and whether a later one (a redelivery) got answered. */
function failedDeliveryLog(log: readonly SentDelivery[]): FailedDelivery[] {
  const failed = new Map<string, FailedDelivery>();
  for (const d of log) {
    if (d.status === 'lost') continue;
    const ok = typeof d.status === 'number' && d.status >= 200 && d.status < 300;
    const entry = failed.get(d.id);
    if (entry) {
      entry.statuses.push(d.status);
      entry.answered ||= ok;
    } else if (!ok) failed.set(d.id, { id: d.id, event: d.event, action: d.action, statuses: [d.status], answered: false });
  }
  return [...failed.values()];
}

const unansweredDeliveries = (log: readonly SentDelivery[]): FailedDelivery[] => failedDeliveryLog(log).filter((d) => !d.answered);

function failedDeliveries(log: readonly SentDelivery[]): Pick<ChaosReport['injected'], 'failedDeliveries' | 'failedDeliveriesAnswered'> {
  const failed = failedDeliveryLog(log);
  return { failedDeliveries: failed.length, failedDeliveriesAnswered: failed.filter((d) => d.answered).length };
}

/**
 * The runs a schedule of the campaign's provider started (its runs' ids begin with the schedule's),
 * each with its result once completed: only completed ones with `completedOnly`, only those started
 * since `startedSince` (epoch ms) with it.
 */
async function* scheduleRuns<R>(
  stack: ProcessStack,
  workflowType: string,
  scheduleId: string,
  { completedOnly = false, startedSince = 0 }: { completedOnly?: boolean; startedSince?: number },
): AsyncGenerator<{ status: string; report?: R }> {
  const query = `WorkflowType = '${workflowType}'${completedOnly ? " AND ExecutionStatus = 'Completed'" : ''}`;
  for await (const info of stack.client.workflow.list({ query })) {
    if (!info.workflowId.startsWith(`${scheduleId}-`) || info.startTime.getTime() < startedSince) continue;
    const completed = info.status.name === 'COMPLETED';
    const report = completed ? ((await stack.client.workflow.getHandle(info.workflowId, info.runId).result()) as R) : undefined;
    yield { status: info.status.name, ...(report !== undefined ? { report } : {}) };
  }
}

/** Runners the provider's liveness passes asked to leave because their pool did not count them, and the stuck pools and runners they healed. */
async function livenessOutcomes(stack: ProcessStack, provider: string): Promise<{ asked: string[]; poolsReset: number; stuckRunnersEnded: number; poolLooksAsked: string[] }> {
  const names = new Set<string>();
  let poolsReset = 0;
  let stuckRunnersEnded = 0;
  const poolLooksAsked: string[] = [];
  for await (const { report } of scheduleRuns<LivenessReport>(stack, LIVENESS_CHECK_WORKFLOW, livenessScheduleId(provider, 'machines'), { completedOnly: true })) {
    for (const { name } of report?.uncounted ?? []) names.add(name);
    poolsReset += report?.repaired?.length ?? 0;
    stuckRunnersEnded += report?.stuckRunnersEnded?.length ?? 0;
    for (const { why } of report?.poolsAskedToLook ?? []) poolLooksAsked.push(why);
  }
  return { asked: [...names].sort(), poolsReset, stuckRunnersEnded, poolLooksAsked };
}

/** Jobs the provider's sweeps took out of a pool's queue because GitHub had already run them. */
async function settledJobsTakenOut(stack: ProcessStack, provider: string): Promise<number> {
  const jobs = new Set<number>();
  for await (const { report } of scheduleRuns<SweepReport>(stack, PROVIDER_SWEEP_WORKFLOW, sweepScheduleId(provider), { completedOnly: true })) {
    for (const { jobId } of report?.github?.dequeued ?? []) jobs.add(jobId);
  }
  return jobs.size;
}

/** The provider's sweep runs started since `sinceMs`, by status, and the distinct GitHub failures of those that completed. */
async function recentSweeps(stack: ProcessStack, provider: string, sinceMs: number): Promise<string[]> {
  const statuses = new Map<string, number>();
  const failures = new Set<string>();
  try {
    for await (const { status, report } of scheduleRuns<SweepReport>(stack, PROVIDER_SWEEP_WORKFLOW, sweepScheduleId(provider), { startedSince: sinceMs })) {
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      for (const f of report?.github?.failed ?? []) failures.add(`${f.target}: ${f.error}`.slice(0, 200));
    }
  } catch (err) {
    return [`sweep runs not read: ${(err as Error).message}`];
  }
  const byStatus = [...statuses].map(([status, n]) => `${n} ${status.toLowerCase()}`).join(', ') || 'none';
  return [`sweep runs meanwhile: ${byStatus}`, ...[...failures].slice(0, 5).map((f) => `sweep failure: ${f}`)];
}

/** What an open workflow is waiting for, for the report. */
async function describeOpen(stack: ProcessStack, workflowId: string): Promise<string> {
  const handle = stack.client.workflow.getHandle(workflowId);
  try {
    if (workflowId.startsWith('pool/')) {
      const view = await handle.query(poolStateQuery);
      return `${workflowId} deleting=${view.deleting} runners=${view.runners.map((r) => `${r.name}:${r.status}/${r.runnerStatus}`).join(',')}`;
    }
    if (workflowId.startsWith('scaleset/')) {
      const view = await handle.query(scaleSetStateQuery);
      return `${workflowId} ${view.status} sessions opened=${view.sessionsOpened} jobs acquired=${view.jobsAcquired} last error: ${view.lastError ?? '-'}`;
    }
    const state = await handle.query(stateQuery);
    const last = state.transitions.at(-1);
    return `${workflowId} ${state.status}/${state.runnerStatus} job=${state.jobId ?? '-'} last: ${last ? `${last.from}→${last.to} ${last.reason ?? ''}` : '-'}`;
  } catch (err) {
    return `${workflowId} (not queryable: ${(err as Error).message})`;
  }
}

const ended = (p: StackProcess): boolean => p.child.exitCode !== null || p.child.signalCode !== null;

const ANSWER_LOST = 'its answer lost';

/**
 * The provider's failures, seeded per attempt. `lying`: each one comes after the create or delete
 * took effect, as a cloud's does when it made the machine and the answer timed out on the way back.
 * A retried create must then find that machine rather than make a second, and a retried delete must
 * take a machine already gone as deleted.
 */
function setProviderFaults(stack: ProcessStack, seed: number, failRate: number, lying: boolean): void {
  const message = (op: string) => (lying ? `chaos: ${op} done, ${ANSWER_LOST}` : `chaos: ${op} failed`);
  stack.machines.setFault('create', { failRate, seed, afterWork: lying, message: message('create') });
  stack.machines.setFault('delete', { failRate, hangRate: 0.05, seed: seed + 1, afterWork: lying, message: message('delete') });
}

/** A process that fails to start (Temporal away, its port not yet free) is tried again a few times. */
async function startedWithinAttempts(start: () => Promise<unknown>, attempts = 5): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      return;
    } catch (err) {
      if (attempt >= attempts) throw err;
      await sleep(1_000);
    }
  }
}

function completedJobs(stack: ProcessStack, ids: ReadonlySet<number>): number {
  return stack.sim.jobs().filter((j) => ids.has(j.id) && j.status === 'completed').length;
}

/** Breaks things at seeded moments until told to stop. */
class ChaosDriver {
  private restarting?: Promise<void>;
  private temporalRestarted = false;
  private providerLying = false;
  private providerLied = false;
  /** Whether a fault of the mode's own kinds (Actions service, or webhooks) was injected yet. */
  private ownWeatherCame = false;
  /** Machines removed behind the provider's back: a create retried after that rightly makes a new one. */
  readonly vanished = new Set<string>();
  /** Runners reset after they left: each rightly makes its machine again. */
  readonly resets = new Set<string>();
  /** The scale-set listener's status when last looked at, and the look under way (see `watchListener`). */
  private listenerStatus?: string;
  private listenerLook?: Promise<void>;

  constructor(
    private readonly stack: ProcessStack,
    private readonly taskQueue: string,
    private readonly random: SeededRandom,
    private readonly options: ChaosOptions,
    private readonly injected: ChaosReport['injected'],
    private readonly mode: ChaosMode,
    private readonly poolName: string,
  ) {}

  /**
   * `progress` is the share of jobs done: the first worker kill comes by a quarter of them at the
   * latest, the first API kill by 40 %.
   */
  async run(stop: () => boolean, progress: () => number): Promise<void> {
    let nextWorkerKill = Date.now() + this.random.int(3_000, 10_000);
    let nextApiKill = Date.now() + this.random.int(8_000, 20_000);
    const temporalRestartAt = Date.now() + this.random.int(15_000, 30_000);
    while (!stop()) {
      await sleep(250);
      const now = Date.now();
      // At least one of the mode's own faults, by a tenth of the jobs: a short campaign's few picks
      // from every kind could otherwise all be the ones both modes meet.
      const ownWeatherDue = !this.ownWeatherCame && progress() >= 0.1;
      if (this.random.chance(0.05) || ownWeatherDue) this.injectGitHubFault(ownWeatherDue);
      if (this.options.killMachines && this.random.chance(0.03)) this.killMachine();
      // Spells of a provider whose failures come after the work, turned on or off every ~12 s on
      // average, the first by a fifth of the jobs at the latest.
      if (this.random.chance(0.02) || (!this.providerLied && progress() >= 0.2)) {
        this.providerLying = !this.providerLying;
        this.providerLied = true;
        setProviderFaults(this.stack, this.options.seed, providerFailureRate(this.options), this.providerLying);
      }
      // At least one reset, once half the jobs are done and runners have left to reset.
      if (this.resets.size < MAX_RUNNER_RESETS && (this.random.chance(0.02) || (this.resets.size === 0 && progress() >= 0.5))) await this.resetLeftRunner();
      // Once, while jobs still wait: the scale set has no session until the pool's look starts a listener again.
      if (this.injected.listenerTerminations === 0 && progress() >= 0.3) await this.terminateListener();
      if (this.mode === 'scaleSet') this.watchListener();
      if (this.restarting) continue;
      const deadWorker = this.endedSlot(this.stack.workers);
      const deadApi = this.endedSlot(this.stack.apis);
      if (now >= nextWorkerKill || (this.injected.workerKills === 0 && progress() >= 0.25)) {
        nextWorkerKill = now + this.random.int(10_000, 30_000);
        this.inBackground(() => this.killWorker());
      } else if (now >= nextApiKill || (this.injected.apiKills === 0 && progress() >= 0.4)) {
        nextApiKill = now + this.random.int(15_000, 40_000);
        this.inBackground(() => this.killApi());
      } else if (this.options.restartTemporal && !this.temporalRestarted && now >= temporalRestartAt) {
        this.temporalRestarted = true;
        this.inBackground(() => this.restartTemporal());
      } else if (deadWorker !== undefined) {
        // A worker that died on its own (e.g. while Temporal was away), or did not start again, is started like a killed one.
        this.inBackground(() => this.startWorker(deadWorker));
      } else if (deadApi !== undefined) {
        this.inBackground(() => this.startApi(deadApi));
      }
    }
    await this.restarting;
  }

  /** Makes sure every worker and API runs (after the last kills). */
  async ensureRunning(): Promise<void> {
    await this.restarting;
    for (const [slot, worker] of this.stack.workers.entries()) if (ended(worker)) await this.startWorker(slot);
    for (const [slot, api] of this.stack.apis.entries()) if (ended(api)) await this.startApi(slot);
  }

  private endedSlot(processes: readonly StackProcess[]): number | undefined {
    const slot = processes.findIndex(ended);
    return slot < 0 ? undefined : slot;
  }

  /**
   * One kill or restart at a time. One that fails is logged, not thrown: the process it left
   * stopped is started at the driver's next turn, and an unobserved failure would end the campaign
   * without stopping what it started.
   */
  private inBackground(task: () => Promise<void>): void {
    this.restarting = task()
      .catch((err: unknown) => this.options.log(`chaos: ${(err as Error).message}`))
      .finally(() => (this.restarting = undefined));
  }

  private injectGitHubFault(ownOnly = false): void {
    const fault = { ...githubFault(this.random, this.mode, ownOnly), forMs: FAULT_LIFETIME_MS };
    if ((ownFaults(this.mode) as readonly string[]).includes(fault.kind)) this.ownWeatherCame = true;
    this.stack.sim.setFault(fault);
    this.injected.githubFaults[fault.kind] = (this.injected.githubFaults[fault.kind] ?? 0) + 1;
  }

  /** One of the workers; the others, if any, go on meanwhile. */
  private async killWorker(): Promise<void> {
    const slot = this.pickSlot(this.stack.workers);
    await this.stack.workers[slot]!.kill('SIGKILL');
    this.injected.workerKills += 1;
    this.options.log(`chaos: worker${this.slotName(this.stack.workers, slot)} SIGKILLed (${this.injected.workerKills})`);
    await sleep(this.random.int(500, 3_000));
    await this.startWorker(slot);
  }

  private async killApi(): Promise<void> {
    const slot = this.pickSlot(this.stack.apis);
    await this.stack.apis[slot]!.kill('SIGKILL');
    this.injected.apiKills += 1;
    this.options.log(`chaos: API${this.slotName(this.stack.apis, slot)} SIGKILLed (${this.injected.apiKills})`);
    await sleep(this.random.int(500, 3_000));
    await this.startApi(slot);
  }

  /** Draws only when there is a choice, so that a seed of a one-process campaign repeats as before. */
  private pickSlot(processes: readonly StackProcess[]): number {
    return processes.length > 1 ? this.random.int(0, processes.length - 1) : 0;
  }

  private slotName(processes: readonly StackProcess[], slot: number): string {
    return processes.length > 1 ? ` ${slot + 1} of ${processes.length}` : '';
  }

  private startWorker(slot: number): Promise<void> {
    return startedWithinAttempts(() => this.stack.startWorker(slot));
  }

  private startApi(slot: number): Promise<void> {
    return startedWithinAttempts(() => this.stack.restartApi(slot));
  }

  /**
   * Down for 2 – 30 s, as an upgrade or a database failover can be: often longer than a machine
   * retries its status callback (10 s), so some runners' news must be found another way.
   */
  private async restartTemporal(): Promise<void> {
    const downMs = this.random.int(2_000, 30_000);
    this.options.log(`chaos: stopping the Temporal server for ${Math.round(downMs / 1000)} s`);
    await this.options.restartTemporal!(downMs);
    this.injected.temporalRestarts = 1;
    this.injected.temporalDownMs = downMs;
    // Deliveries that failed while the server was down are left to runnerflow's redelivery schedule.
    this.options.log('chaos: Temporal server back');
  }

  /**
   * What `temporal workflow reset --type FirstWorkflowTask --reapply-type None` does to a runner that
   * has left: it begins its life again and makes a machine its pool has written off. Its pool never
   * counts it; the liveness checks ask it to leave, unless it takes a job and leaves after that.
   */
  private async resetLeftRunner(): Promise<void> {
    const query = `WorkflowType = 'runnerInstance' AND ExecutionStatus = 'Completed' AND TaskQueue = '${this.taskQueue}'`;
    const left: string[] = [];
    try {
      for await (const info of this.stack.client.workflow.list({ query, pageSize: 50 })) {
        if (!this.resets.has(info.workflowId.replace(/^runner\//, ''))) left.push(info.workflowId);
        if (left.length >= 50) break;
      }
      if (left.length === 0) return;
      const workflowId = this.random.pick(left);
      const events = (await this.stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      const firstTask = events.find((e) => e.eventType === proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
      if (!firstTask?.eventId) return;
      await this.stack.client.workflowService.resetWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId },
        workflowTaskFinishEventId: firstTask.eventId,
        reason: 'chaos: an operator reset a runner that had left',
        requestId: randomUUID(),
        resetReapplyType: proto.temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
      });
      this.resets.add(workflowId.replace(/^runner\//, ''));
      this.injected.runnerResets += 1;
      this.options.log(`chaos: ${workflowId} reset after it left (${this.injected.runnerResets})`);
    } catch (err) {
      // Temporal restarting, or the runner already reset by another look: another chance later.
      this.options.log(`chaos: reset not made: ${(err as Error).message}`);
    }
  }

  /**
   * Logs each change of the listener's status, with its last error: a campaign whose jobs wait for
   * an acquire says in its log what the listener was doing. One look at a time, in the background,
   * since a query waits while no worker runs.
   */
  private watchListener(): void {
    if (this.listenerLook) return;
    const look = async (): Promise<void> => {
      const view = await this.stack.client.workflow.getHandle(scaleSetListenerId(this.poolName)).query(scaleSetStateQuery);
      if (view.status === this.listenerStatus) return;
      this.listenerStatus = view.status;
      this.options.log(`chaos: listener ${view.status}${view.lastError ? ` (${view.lastError})` : ''}`);
    };
    this.listenerLook = look()
      .catch(() => undefined)
      .then(() => sleep(1_000))
      .finally(() => (this.listenerLook = undefined));
  }

  /** What `temporal workflow terminate` does to the scale set's listener: it ends without closing its session. */
  private async terminateListener(): Promise<void> {
    try {
      await this.stack.client.workflow.getHandle(scaleSetListenerId(this.poolName)).terminate('chaos: an operator terminated the listener');
      this.injected.listenerTerminations = 1;
      this.options.log('chaos: the scale-set listener terminated');
    } catch (err) {
      // Temporal restarting, or the listener between runs: another chance later.
      this.options.log(`chaos: listener not terminated: ${(err as Error).message}`);
    }
  }

  /** A machine dies under its runner (idle or busy): the runner goes offline, the provider shows it stopped or not at all. */
  private killMachine(): void {
    const machines = this.stack.machines.instances().filter((m) => m.status === 'running');
    if (machines.length === 0) return;
    const victim = this.random.pick(machines);
    const agent = this.stack.sim.agents().find((a) => a.runnerName === victim.name && a.state !== 'done');
    if (agent) this.stack.sim.crashAgent(agent.id, { failJobAfterMs: JOB_GIVE_UP_MS });
    try {
      if (this.random.chance(0.5)) this.stack.machines.setStatus(victim.name, 'stopped', 'chaos: machine killed');
      else {
        this.stack.machines.removeInstance(victim.name);
        this.vanished.add(victim.name);
      }
      this.injected.machineKills += 1;
    } catch {
      // Deleted in the meantime: nothing to kill.
    }
  }
}
