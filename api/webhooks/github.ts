/**
 * GitHub webhook intake (`POST /webhooks/github`) as a fetch-style handler.
 * It verifies the signature on the raw body, reads `workflow_job` events and
 * hands them to a WorkflowJobSink; it does no other work, so it answers well
 * inside GitHub's 10-second delivery timeout.
 *
 * | delivery                                   | answer                           |
 * |--------------------------------------------|----------------------------------|
 * | body over the limit (25 MB)                | 413                              |
 * | signature missing or wrong                 | 401, nothing signalled           |
 * | no X-GitHub-Event / X-GitHub-Delivery      | 400                              |
 * | delivery id seen lately                    | 202 `duplicate`, sink not called |
 * | `ping`                                     | 200 `pong`                       |
 * | other events, other workflow_job actions   | 202 `ignored`                    |
 * | malformed JSON, missing fields             | 400 naming the field             |
 * | workflow_job queued                        | 200 `queued` (sink.jobQueued)    |
 * | in_progress / completed on our runner      | 200 `signalled`                  |
 * | ... on a runner we do not own              | 202 `not_owned`                  |
 * | completed with no runner (cancelled queued)| 202 `no_runner` (sink.jobLeftQueue when given) |
 * | the sink failed                            | 500 (GitHub shows the failed delivery for redelivery) |
 */
import { Webhooks } from '@octokit/webhooks';
import { webhookDeliveries, webhookPreviousSecretDeliveries } from '../../observability/metrics';
import { isReadableTime, type QueuedJob } from '../../workflows/pool-messages';
import type { JobCompletedArgs, JobStartedArgs } from '../../workflows/messages';
import { BodyTooLargeError, readBoundedBody } from './bounded-body';
import { RecentDeliveries } from './recent-deliveries';
import { describeIssues, workflowJobEventSchema, type WorkflowJobEvent } from './workflow-job-event';

export type SignalOutcome = 'signalled' | 'not_owned';

/** When GitHub says the job was queued and when it started (ISO times from the in_progress payload). */
export interface JobTiming {
  createdAt?: string;
  startedAt?: string;
}

/**
 * Where workflow_job events go. `jobQueued` is the seam the pool workflow
 * takes over (routing a queued job to a pool); the runner methods signal the
 * instance workflow named after the runner and say whether one exists.
 */
export interface WorkflowJobSink {
  jobQueued(job: QueuedJob & { deliveryId: string }): Promise<void>;
  jobStarted(runnerName: string, args: JobStartedArgs, timing?: JobTiming): Promise<SignalOutcome>;
  jobCompleted(runnerName: string, args: JobCompletedArgs): Promise<SignalOutcome>;
  /**
   * Optional: a queued job left the queue without ever reaching a runner
   * (cancelled before it started), so whoever counted it as demand can forget it.
   */
  jobLeftQueue?(job: { jobId: number; runId?: number; labels: string[]; conclusion?: string; deliveryId: string }): Promise<void>;
  /**
   * Optional: a runner took the job (`ownRunner`: one of ours, already told). Another pool
   * that was routed the job may still count it as demand, and is told it went.
   */
  jobTaken?(job: { jobId: number; labels: string[]; repository?: string; runnerName: string; ownRunner: boolean; action: 'in_progress' | 'completed' }): Promise<void>;
}

export interface WebhookLogger {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
}

export interface GitHubWebhookDeps {
  secret: string;
  /**
   * The secret GitHub signed with before a rotation, accepted beside `secret` until GitHub has
   * the new one: during a rotation some deliveries (in flight, or sent again) carry either.
   */
  previousSecret?: string;
  /**
   * Secrets read again now, when a delivery matched none or only the previous secret: a secret
   * file may have just been replaced or emptied. Undefined when nothing changed.
   */
  secretsAfterRecheck?: () => { secret: string; previousSecret?: string } | undefined;
  /** Where signatures seen are counted (previous secret, none); one shared by the process by default. */
  signatures?: WebhookSignatures;
  sink: WorkflowJobSink;
  logger?: WebhookLogger;
  /** Largest delivery accepted; GitHub caps payloads at 25 MB. */
  maxBodyBytes?: number;
  /** Defaults to one LRU shared by the process. */
  recentDeliveries?: RecentDeliveries;
}

export const MAX_WEBHOOK_BODY_BYTES = 25 * 1024 * 1024;
const sharedDeliveries = new RecentDeliveries();
/** Verifiers by secret: the current one, and during a rotation the previous one. */
const verifiers = new Map<string, Webhooks>();

type Result = 'pong' | 'ignored' | 'duplicate' | 'queued' | 'signalled' | 'not_owned' | 'no_runner';

const json = (status: number, body: unknown): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8' } });

const failure = (status: number, code: string, message: string): Response => json(status, { error: { code, message } });

/** Constant-time HMAC comparison by @octokit/webhooks. */
async function signatureValid(secret: string, payload: string, signature: string): Promise<boolean> {
  try {
    let webhooks = verifiers.get(secret);
    if (!webhooks) {
      // Inside the try: an empty secret makes the constructor throw, which must read as "not verified".
      webhooks = new Webhooks({ secret });
      // Secrets change only with the configuration: a few entries at most, but never a growing map.
      if (verifiers.size >= 4) verifiers.clear();
      verifiers.set(secret, webhooks);
    }
    return await webhooks.verify(payload, signature);
  } catch {
    return false;
  }
}

/** Which configured secret signed the delivery, if any. */
async function signedWith(deps: Pick<GitHubWebhookDeps, 'secret' | 'previousSecret'>, payload: string, signature: string): Promise<'current' | 'previous' | undefined> {
  if (await signatureValid(deps.secret, payload, signature)) return 'current';
  if (deps.previousSecret && (await signatureValid(deps.previousSecret, payload, signature))) return 'previous';
  return undefined;
}

/**
 * What this process has seen of deliveries' signatures, for the installation's status: those
 * signed with the previous secret of a rotation (GitHub still has it) and those refused because
 * they matched no secret (GitHub's webhook has a secret runnerflow does not: every delivery fails,
 * and is asked for again in vain until the two agree). Said in the log at most once a minute
 * each: enough to show it, without a line per delivery.
 */
export class WebhookSignatures {
  readonly since = Date.now();
  previous = 0;
  lastPreviousAt: number | undefined;
  refused = 0;
  lastRefusedAt: number | undefined;
  private readonly saidAt = { previous: Number.NEGATIVE_INFINITY, refused: Number.NEGATIVE_INFINITY };

  /** Records a delivery signed with the previous secret; true when it is time to say so in the log. */
  signedWithPrevious(now = Date.now()): boolean {
    this.previous += 1;
    this.lastPreviousAt = now;
    return this.timeToSay('previous', now);
  }

  /** Records a delivery whose signature matched no secret; true when it is time to say so in the log. */
  signedWithNone(now = Date.now()): boolean {
    this.refused += 1;
    this.lastRefusedAt = now;
    return this.timeToSay('refused', now);
  }

  private timeToSay(kind: keyof WebhookSignatures['saidAt'], now: number): boolean {
    if (now - this.saidAt[kind] < SIGNATURE_LOG_INTERVAL_MS) return false;
    this.saidAt[kind] = now;
    return true;
  }
}

const SIGNATURE_LOG_INTERVAL_MS = 60_000;
const sharedSignatures = new WebhookSignatures();

/**
 * The events a delivery is counted under by name. The header is the sender's to write, read
 * before the signature is: counted as it came, each unsigned request could add a series to
 * the metrics for good.
 */
const COUNTED_EVENTS = new Set(['workflow_job', 'ping']);

export async function handleGitHubWebhook(request: Request, deps: GitHubWebhookDeps): Promise<Response> {
  const event = request.headers.get('x-github-event') ?? '';
  const eventLabel = COUNTED_EVENTS.has(event) ? event : event ? 'other' : 'unknown';
  const count = (result: string): void => webhookDeliveries.inc({ event: eventLabel, result });

  let raw: Uint8Array;
  try {
    raw = await readBoundedBody(request, deps.maxBodyBytes ?? MAX_WEBHOOK_BODY_BYTES);
  } catch (err) {
    if (!(err instanceof BodyTooLargeError)) throw err;
    count('too_large');
    return failure(413, 'payload_too_large', `webhook body exceeds ${err.limitBytes} bytes`);
  }
  const payload = new TextDecoder().decode(raw);
  const signature = request.headers.get('x-hub-signature-256');
  if (!signature) {
    count('unauthorized');
    return failure(401, 'missing_signature', 'X-Hub-Signature-256 header is required');
  }
  const signatures = deps.signatures ?? sharedSignatures;
  let signer = await signedWith(deps, payload, signature);
  // A signature that matched nothing may be the secret just written in; one that matched the
  // previous secret, the one whose file was just emptied to end the rotation.
  const rechecked = signer === 'current' ? undefined : deps.secretsAfterRecheck?.();
  if (rechecked) signer = await signedWith(rechecked, payload, signature);
  if (!signer) {
    count('unauthorized');
    if (signatures.signedWithNone()) {
      deps.logger?.warn('webhook signature mismatch: the delivery matches no configured secret (said at most once a minute)', {
        event,
        deliveryId: request.headers.get('x-github-delivery') ?? undefined,
      });
    }
    return failure(401, 'invalid_signature', 'X-Hub-Signature-256 does not match the body');
  }
  if (signer === 'previous') {
    webhookPreviousSecretDeliveries.inc();
    if (signatures.signedWithPrevious()) {
      deps.logger?.info('webhook delivery signed with the previous secret: GitHub still has it; remove api.previousWebhookSecret once deliveries stop using it', {
        event,
        deliveryId: request.headers.get('x-github-delivery') ?? undefined,
      });
    }
  }
  const deliveryId = request.headers.get('x-github-delivery');
  const missing = !event ? 'X-GitHub-Event' : !deliveryId ? 'X-GitHub-Delivery' : undefined;
  if (missing || !deliveryId) {
    count('bad_request');
    return failure(400, 'missing_header', `${missing ?? 'X-GitHub-Delivery'} header is required`);
  }
  const acknowledge = (result: Result, extra: Record<string, unknown> = {}): Response => {
    count(result);
    return json(result === 'pong' || result === 'queued' || result === 'signalled' ? 200 : 202, { result, ...extra });
  };

  const deliveries = deps.recentDeliveries ?? sharedDeliveries;
  if (deliveries.has(deliveryId)) return acknowledge('duplicate');
  if (event === 'ping') return acknowledge('pong');
  if (event !== 'workflow_job') return acknowledge('ignored', { event });

  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    count('bad_request');
    return failure(400, 'invalid_json', 'body is not valid JSON');
  }
  const parsed = workflowJobEventSchema.safeParse(body);
  if (!parsed.success) {
    count('bad_request');
    return failure(400, 'invalid_payload', describeIssues(parsed.error));
  }

  let result: Result;
  try {
    result = await dispatch(parsed.data, deliveryId, deps);
  } catch (err) {
    count('sink_failed');
    deps.logger?.warn('webhook not handed over', { event, deliveryId, error: (err as Error).message });
    return failure(500, 'sink_failed', `could not hand the event over: ${(err as Error).message}`);
  }
  // Remembered only once handed over, so a redelivery after a failure is not dropped.
  deliveries.add(deliveryId);
  return acknowledge(result);
}

async function dispatch(event: WorkflowJobEvent, deliveryId: string, deps: GitHubWebhookDeps): Promise<Result> {
  const job = event.workflow_job;
  const runnerName = job.runner_name ?? undefined;
  switch (event.action) {
    case 'queued':
      // Also for status `waiting` (an environment awaiting approval): the job will need a runner once approved.
      await deps.sink.jobQueued({
        jobId: job.id,
        runId: job.run_id,
        labels: job.labels,
        repository: event.repository?.full_name,
        // The pool drops a job whose time it cannot read: a malformed one is left out instead.
        queuedAt: [job.created_at, job.started_at].find(isReadableTime),
        deliveryId,
      });
      return 'queued';
    case 'in_progress': {
      if (!runnerName) return 'no_runner';
      const outcome = await deps.sink.jobStarted(runnerName, { jobId: job.id, runId: job.run_id }, { createdAt: job.created_at, startedAt: job.started_at ?? undefined });
      await deps.sink.jobTaken?.({ jobId: job.id, labels: job.labels, repository: event.repository?.full_name, runnerName, ownRunner: outcome === 'signalled', action: 'in_progress' });
      return outcome;
    }
    case 'completed': {
      if (!runnerName) {
        await deps.sink.jobLeftQueue?.({ jobId: job.id, runId: job.run_id, labels: job.labels, conclusion: job.conclusion ?? undefined, deliveryId });
        return 'no_runner';
      }
      const outcome = await deps.sink.jobCompleted(runnerName, { jobId: job.id, conclusion: job.conclusion ?? undefined });
      // Also here: the job's in_progress event may have been lost.
      await deps.sink.jobTaken?.({ jobId: job.id, labels: job.labels, repository: event.repository?.full_name, runnerName, ownRunner: outcome === 'signalled', action: 'completed' });
      return outcome;
    }
    default:
      return 'ignored';
  }
}
