/**
 * Activities of the runnerInstance workflow. Each one is a thin, idempotent step
 * over the provider and GitHub ports: safe to retry, safe to replay, and never
 * returning a secret (results are written to workflow history).
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { controllerLabel, scopeUrl, type GitHubPort, type RemoveRunnerOutcome, type RunnerCredential } from '../github/port';
import { takesPoolExtraSpecs } from '../providers/external/provider';
import type { BootstrapInstance, MachineListing, ProviderCallContext, ProviderInstanceStatus, ProviderPort } from '../providers/port';
import { isNotFound, listMachines } from '../providers/port';
import { runnerWorkflowId, type InstanceSpec, type RunnerInstanceInput } from '../workflows/messages';
import type { ReportToPoolArgs } from './pool-activities';
import { FAILURE_TYPES, toActivityFailure } from './failures';
import { eachConcurrently, within } from '../domain/concurrency';
import { mintedIn, type MintedCredential } from '../domain/minted-credential';
import { CreateAttempts, type CreateAttempt } from './create-attempts';
import { actionsClientFor, removeRunnerAtGitHub, type GitHubClients, type RemoveRunnerArgs } from './remove-runner';
import { whileHeartbeating } from './heartbeat';
import { createObserveRunner } from './observe-runner';
import { RunnerToolsCache } from './runner-tools-cache';
import { runnerCreateSeconds, runnerDeleteSeconds } from '../observability/metrics';
import type { Histogram } from 'prom-client';

/** Times one attempt into a lifecycle histogram, labelled by its outcome. */
async function timedAttempt<T>(histogram: Histogram<'pool' | 'provider' | 'status'>, labels: { pool: string; provider: string }, run: () => Promise<T>): Promise<T> {
  const stop = histogram.startTimer(labels);
  try {
    const result = await run();
    stop({ status: 'ok' });
    return result;
  } catch (err) {
    stop({ status: 'error' });
    throw err;
  }
}

export interface InstanceActivityDeps {
  controllerId: string;
  providers: ReadonlyMap<string, ProviderPort>;
  github: GitHubClients;
  /** Where the instance reports its status (POST /api/v1/callbacks/status). */
  callbackUrl: string;
  metadataUrl: string;
  /** Mints the instance's own callback token, bound to its name and workflow run. */
  mintInstanceToken(claims: { instance: string; runId: string; pool: string }, ttlMs: number): Promise<string>;
  /** Seals a secret for workflow history (see api/sealed-secret.ts); without it JIT configs are not kept for the metadata service. */
  sealSecret?(plain: string): string;
  /** Opens what `sealSecret` sealed: a retried create hands an earlier attempt's registration to the provider again. */
  unsealSecret?(sealed: string): string;
  sshKeys?: string[];
  caCertBundle?: string;
  runnerToolsTtlMs?: number;
  /**
   * Tells a pool a runner's machine is gone, as the `reportToPool` activity does; the worker
   * wires it to that activity. Without it an inline delete leaves the report to the runner.
   */
  reportGone?(args: ReportToPoolArgs): Promise<void>;
  /** Longest an inline delete waits for the pool to take its report (default 2 s). */
  goneReportBudgetMs?: number;
}

export interface CreateInstanceArgs {
  name: string;
  pool: string;
  provider: string;
  spec: InstanceSpec;
  /** What an earlier attempt minted before it failed; see `MintedCredential`. */
  minted?: MintedCredential;
}

function withMinted(failure: unknown, minted: MintedCredential | undefined): unknown {
  if (!minted || !(failure instanceof ApplicationFailure)) return failure;
  const [first, ...rest] = failure.details ?? [];
  return ApplicationFailure.create({
    type: failure.type ?? undefined,
    message: failure.message,
    nonRetryable: failure.nonRetryable ?? undefined,
    ...(failure.nextRetryDelay !== undefined ? { nextRetryDelay: failure.nextRetryDelay } : {}),
    details: [{ ...(typeof first === 'object' && first !== null ? first : {}), minted }, ...rest],
  });
}

export interface CreatedInstance {
  providerId: string;
  githubRunnerId?: number;
  status: ProviderInstanceStatus;
  /** True when an earlier attempt had already made the machine. */
  reused: boolean;
  /** The JIT config, sealed: images that fetch it from the metadata service get it from here. */
  sealedJitConfig?: string;
}

/** The inline first attempt: made (and what it made), or left to the ordinary activity. */
export type InlineCreateOutcome = { inline: false } | { inline: true; created: CreatedInstance };

/** The inline first delete attempt: made (the machine is gone), or left to the ordinary activity. */
export interface InlineDeleteOutcome {
  inline: boolean;
  /** The pool has `goneReport` (or is gone itself); otherwise the runner still owes it the report. */
  reported?: boolean;
}

export interface InlineDeleteArgs extends DeleteInstanceArgs {
  /** The runner's report that its machine is gone, sent once it is (see `deleteInstanceInline`). */
  goneReport?: ReportToPoolArgs;
}

export interface DeleteInstanceArgs {
  provider: string;
  name: string;
  pool: string;
  providerId?: string;
}

export type { RemoveRunnerArgs };

type ExtraSpecs = Record<string, unknown>;

const GRPC_NOT_FOUND = 5;

function isGrpcNotFound(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if ((e as { code?: unknown }).code === GRPC_NOT_FOUND) return true;
  }
  return false;
}

/**
 * The pool extra specs a runner's machine was made with. A runner's spec is a snapshot of
 * its pool's settings, and its create handed those extra specs to the provider; every later
 * call about the machine sends the same ones, so a provider that picks its region, project
 * or account from them looks where the machine is, also after the pool's were changed. They
 * are read from the first event of the runner's workflow (its input), which the server
 * answers without a worker and keeps after the workflow closed. A name lives once, so an
 * answer holds for good; the `kept` most recently asked for are remembered.
 */
export class RunnerExtraSpecs {
  private readonly known = new Map<string, ExtraSpecs>();

  constructor(private readonly kept = 20_000) {}

  /** Undefined when no workflow of that name is left to say (never started, or past retention). */
  async of(client: Client, name: string): Promise<ExtraSpecs | undefined> {
    const specs = this.known.get(name) ?? (await this.read(client, name));
    if (specs) {
      // Most recently asked last, so the least recently asked goes first.
      this.known.delete(name);
      if (this.known.size >= this.kept) this.known.delete(this.known.keys().next().value!);
      this.known.set(name, specs);
    }
    return specs;
  }

  private async read(client: Client, name: string): Promise<ExtraSpecs | undefined> {
    let response;
    try {
      response = await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId: runnerWorkflowId(name) },
        maximumPageSize: 1,
      });
    } catch (err) {
      if (isGrpcNotFound(err)) return undefined;
      throw err;
    }
    const payload = response.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) return undefined;
    const specs = client.options.loadedDataConverter.payloadConverter.fromPayload<Partial<RunnerInstanceInput> | undefined>(payload)?.spec?.extraSpecs;
    return typeof specs === 'object' && specs !== null && !Array.isArray(specs) ? specs : undefined;
  }
}

/** The same extra specs always give the same key, whatever the order of their fields. */
export function extraSpecsKey(specs: ExtraSpecs | undefined): string {
  return JSON.stringify(specs ?? {}, (_key, value: unknown) =>
    typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))) : value,
  );
}

/** One listing of one pool, with the extra specs to send with it. */
export interface PoolListingRequest {
  poolId: string;
  extraSpecs?: ExtraSpecs;
}

const POOL_LISTINGS_AT_ONCE = 4;

/**
 * One ListInstances per pool and extra specs (listMachines sends one context to every pool),
 * a few at a time. A pool whose machines were made with different extra specs (its
 * settings changed while some lived) is listed once with each.
 */
export async function listPoolsWithSpecs(target: ProviderPort, requests: readonly PoolListingRequest[], ctx: ProviderCallContext): Promise<Map<PoolListingRequest, MachineListing>> {
  const listings = new Map<PoolListingRequest, MachineListing>();
  await eachConcurrently(
    requests,
    POOL_LISTINGS_AT_ONCE,
    async (request) => {
      const listingCtx = { ...ctx, ...(request.extraSpecs ? { extraSpecs: request.extraSpecs } : {}) };
      listings.set(request, await listMachines(target, [request.poolId], listingCtx).catch((error: unknown) => ({ machines: [], listings: 0, failed: [{ poolId: request.poolId, error }] })));
    },
    ctx.signal,
  );
  if (ctx.signal?.aborted) throw ctx.signal.reason;
  return listings;
}

const GONE_REPORT_BUDGET_MS = 2_000;
/** Room left in the activity's time after the report's wait, so the activity returns before it times out. */
const GONE_REPORT_MARGIN_MS = 500;

/** Callback tokens outlive the bootstrap window a little so a slow first report still gets through. */
const INSTANCE_TOKEN_MARGIN_MS = 10 * 60_000;

export function createInstanceActivities(deps: InstanceActivityDeps) {
  const tools = new RunnerToolsCache(deps.runnerToolsTtlMs);
  const runnerSpecs = new RunnerExtraSpecs();
  const attempts = new CreateAttempts();

  /**
   * The extra specs to send with a call about this runner's machine (see RunnerExtraSpecs).
   * None when its workflow is gone from Temporal: then nothing here knows them.
   */
  async function extraSpecsOf(target: ProviderPort, name: string): Promise<Pick<ProviderCallContext, 'extraSpecs'>> {
    if (!takesPoolExtraSpecs(target)) return {};
    const extraSpecs = await runnerSpecs.of(Context.current().client, name);
    return extraSpecs ? { extraSpecs } : {};
  }

  function provider(name: string): ProviderPort {
    const found = deps.providers.get(name);
    if (!found) {
      const known = [...deps.providers.keys()].join(', ') || 'none';
      throw ApplicationFailure.nonRetryable(`provider "${name}" is not configured on this worker (configured: ${known})`, FAILURE_TYPES.unknownProvider);
    }
    return found;
  }

  const actionsFor = (github: InstanceSpec['github']) => actionsClientFor(deps.github, github);

  /** A scale set's runners get their JIT config from the scale set; others through the REST port. */
  const registeredLabels = (labels: string[]): string[] => [...labels, controllerLabel(deps.controllerId)];

  async function runnerCredential(gh: GitHubPort, args: CreateInstanceArgs, signal: AbortSignal): Promise<RunnerCredential> {
    if (args.spec.scaleSet) {
      const jit = await actionsFor(args.spec.github).generateJitConfig(args.spec.scaleSet.id, args.name, '_work', signal);
      return { kind: 'jit', runnerId: jit.runnerId, encodedJitConfig: jit.encodedJitConfig };
    }
    return gh.createRunnerCredential({
      scope: args.spec.github.scope,
      name: args.name,
      labels: registeredLabels(args.spec.labels),
      runnerGroupId: args.spec.runnerGroupId,
      workFolder: '_work',
      jit: args.spec.ephemeral,
      signal,
    });
  }

  /**
   * The registration an earlier attempt of this runner minted, to hand to the provider again
   * instead of minting anew. That attempt failed or was cut off after registering, and its
   * provider call may still make the machine: a cloud that took the request carries on, and
   * the attempt after it may run on another worker, which cannot wait for it. Minting again
   * would make GitHub drop the registration that machine's agent holds, so its runner would
   * never come online. With the same registration, whichever call makes the machine (the
   * port's create is idempotent by name) holds the runner's one registration.
   * Only while GitHub still has it unused: one that is gone, or held by an online or busy
   * agent, is not handed out again.
   */
  async function earlierRegistration(gh: GitHubPort, args: CreateInstanceArgs, earlier: CreateAttempt | undefined): Promise<RunnerCredential | undefined> {
    if (earlier?.githubRunnerId === undefined) return undefined;
    const encodedJitConfig = earlier.encodedJitConfig ?? (earlier.sealedJitConfig === undefined ? undefined : opened(earlier.sealedJitConfig));
    if (encodedJitConfig === undefined) return undefined;
    const registered = args.spec.scaleSet
      ? await actionsFor(args.spec.github).findRunnerByName(args.name)
      : await gh.findRunnerByName(args.spec.github.scope, args.name);
    if (registered?.id !== earlier.githubRunnerId) return undefined;
    if ('status' in registered && (registered.status === 'online' || registered.busy)) return undefined;
    return { kind: 'jit', runnerId: earlier.githubRunnerId, encodedJitConfig };
  }

  /** A sealed JIT config opened, or nothing when this worker cannot (no key, or another key sealed it). */
  function opened(sealed: string): string | undefined {
    try {
      return deps.unsealSecret?.(sealed);
    } catch {
      return undefined;
    }
  }

  /**
   * Idempotent by instance name: a retried or replayed attempt first looks for the
   * machine an earlier attempt made, so one name never gets two machines, and hands
   * the provider the registration that attempt minted (see earlierRegistration).
   */
  async function create(args: CreateInstanceArgs, boundMs?: number): Promise<CreatedInstance> {
    const target = provider(args.provider);
    const ctx = Context.current();
    const runId = ctx.info.workflowExecution?.runId ?? '';
    const callCtx = { controllerId: deps.controllerId, poolId: args.pool, extraSpecs: args.spec.extraSpecs };
    let minted: MintedCredential | undefined;
    const heartbeatDetails = () => (minted ? { minted } : undefined);
    try {
      return await timedAttempt(runnerCreateSeconds, { pool: args.pool, provider: args.provider }, () => whileHeartbeating((signal) => attempts.run(`${args.provider}\u0000${args.name}`, async (attempt, before) => {
        // Waited for an earlier attempt here (see CreateAttempts), and given up meanwhile: nothing to do.
        signal.throwIfAborted();
        // An earlier attempt's, from the workflow (an inline attempt's failure), this activity's heartbeats or this worker.
        const recorded: CreateAttempt | undefined = args.minted ?? mintedIn(ctx.info.heartbeatDetails);
        // The same registration as this worker's earlier attempt: its JIT config need not be unsealed.
        const earlier = recorded && before?.githubRunnerId === recorded.githubRunnerId ? { ...before, ...recorded } : (recorded ?? before);
        const existing = await target.getInstance(args.name, { ...callCtx, signal }).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        if (existing && existing.status !== 'error') {
          return {
            providerId: existing.providerId,
            status: existing.status,
            reused: true,
            ...(earlier?.sealedJitConfig !== undefined ? { sealedJitConfig: earlier.sealedJitConfig } : {}),
            ...(earlier?.githubRunnerId !== undefined ? { githubRunnerId: earlier.githubRunnerId } : {}),
          };
        }
        if (existing) {
          // GARM: a machine in error is removed before trying again, so nothing half-made lingers.
          await target.deleteInstance(existing.providerId, { ...callCtx, signal });
        }

        const gh = deps.github.get(args.spec.github.credentials);
        const credential = (await earlierRegistration(gh, args, earlier)) ?? (await runnerCredential(gh, args, signal));
        if (credential.kind === 'jit') {
          attempt.githubRunnerId = credential.runnerId;
          attempt.encodedJitConfig = credential.encodedJitConfig;
        }
        if (credential.kind === 'jit' && deps.sealSecret) {
          minted = { sealedJitConfig: deps.sealSecret(credential.encodedJitConfig), githubRunnerId: credential.runnerId };
          attempt.sealedJitConfig = minted.sealedJitConfig;
          // Recorded before the provider is asked: a retry after this attempt dies must still know it.
          if (!ctx.info.isLocal) ctx.heartbeat(heartbeatDetails());
        }
        const instanceToken = await deps.mintInstanceToken(
          { instance: args.name, runId, pool: args.pool },
          args.spec.bootstrapTimeoutMs + INSTANCE_TOKEN_MARGIN_MS,
        );
        const bootstrap: BootstrapInstance = {
          name: args.name,
          poolId: args.pool,
          tools: await tools.get(args.spec.github.credentials, args.spec.github.scope, () => gh.listRunnerDownloads(args.spec.github.scope)),
          repoUrl: scopeUrl(args.spec.github.scope, gh.webUrl),
          callbackUrl: deps.callbackUrl,
          metadataUrl: deps.metadataUrl,
          instanceToken,
          sshKeys: deps.sshKeys ?? [],
          extraSpecs: args.spec.extraSpecs,
          githubRunnerGroup: args.spec.runnerGroup,
          ...(deps.caCertBundle ? { caCertBundle: deps.caCertBundle } : {}),
          arch: args.spec.osArch,
          osType: args.spec.osType,
          flavor: args.spec.flavor,
          image: args.spec.image,
          // A runner registered by its boot script (no JIT config) carries the label too.
          labels: args.spec.scaleSet ? args.spec.labels : registeredLabels(args.spec.labels),
          jitConfigEnabled: credential.kind === 'jit',
          ...(credential.kind === 'jit' ? { jitConfig: credential.encodedJitConfig } : { registrationToken: credential.token }),
        };
        // An attempt given up on (cut off at its bound) starts no machine: the attempt after it
        // hands the provider this registration and makes the machine itself.
        signal.throwIfAborted();
        const created = await target.createInstance(bootstrap, {
          ...callCtx,
          signal,
          timeoutMs: args.spec.bootstrapTimeoutMs,
        });
        if (created.status === 'error') {
          throw ApplicationFailure.create({
            type: FAILURE_TYPES.providerInstanceError,
            message: `provider ${args.provider} created ${args.name} in error state${created.providerFault ? `: ${created.providerFault}` : ''}`,
          });
        }
        return {
          providerId: created.providerId,
          status: created.status,
          reused: false,
          ...(credential.kind === 'jit' ? { githubRunnerId: credential.runnerId } : {}),
          ...(minted ? { sealedJitConfig: minted.sealedJitConfig } : {}),
        };
      }, () => signal.aborted), { ...(boundMs === undefined ? {} : { boundMs }), heartbeatDetails }));
    } catch (err) {
      throw withMinted(toActivityFailure(err), minted);
    }
  }

  /** The report's budget, within what is left of the activity's own time. */
  function goneReportBudget(): number {
    const budget = deps.goneReportBudgetMs ?? GONE_REPORT_BUDGET_MS;
    const info = Context.current().info;
    const left = info.startToCloseTimeoutMs - (Date.now() - info.currentAttemptScheduledTimestampMs) - GONE_REPORT_MARGIN_MS;
    return Number.isFinite(left) ? Math.max(0, Math.min(budget, left)) : budget;
  }

  async function remove(args: DeleteInstanceArgs, boundMs?: number): Promise<void> {
    const target = provider(args.provider);
    try {
      await timedAttempt(runnerDeleteSeconds, { pool: args.pool, provider: args.provider }, () =>
        whileHeartbeating(async (signal) => {
          try {
            const specs = await extraSpecsOf(target, args.name);
            await target.deleteInstance(args.providerId ?? args.name, { controllerId: deps.controllerId, poolId: args.pool, ...specs, signal });
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
        }, boundMs === undefined ? {} : { boundMs }),
      );
    } catch (err) {
      // Never given up on: a delete that stopped would leave the machine running with no owner.
      throw toActivityFailure(err, { retryProviderFaults: true });
    }
  }

  return {
    observeRunner: createObserveRunner({ controllerId: deps.controllerId, provider, github: deps.github, extraSpecsOf }),

    async createInstance(args: CreateInstanceArgs): Promise<CreatedInstance> {
      return create(args);
    },

    /**
     * The first create attempt, run as a local activity, within the provider's
     * `inlineCreateTimeout`; a provider without one is not called (`inline: false`).
     * An attempt cut off at the bound fails with `AttemptDeadline`, and the next attempt
     * (an ordinary activity) finds whatever machine this one got to make.
     */
    async createInstanceInline(args: CreateInstanceArgs): Promise<InlineCreateOutcome> {
      const boundMs = provider(args.provider).inlineCreateTimeoutMs ?? 0;
      if (boundMs <= 0) return { inline: false };
      return { inline: true, created: await create(args, boundMs) };
    },

    /** Succeeds when the machine is gone, including when it was never there. */
    async deleteInstance(args: DeleteInstanceArgs): Promise<void> {
      return remove(args);
    },

    /**
     * The first delete attempt, run as a local activity, within the provider's
     * `inlineDeleteTimeout`; a provider without one is not called (`inline: false`).
     * An attempt cut off at the bound fails with `AttemptDeadline`; the ordinary
     * activity then asks again (deleting is idempotent).
     *
     * With `goneReport`, the machine gone, the pool is told so here: a local activity of its
     * own would cost the runner's closing task another round trip through the worker, about
     * a fortieth of an ephemeral job's CPU under load. The report waits for the pool within a
     * short budget only; a pool that has not taken it by then (continuing as new, the server
     * out of reach) is the runner's to tell through its own report, which is tried for minutes.
     * Told twice, the pool takes "deleted" once. A task lost after this ran is run again: the
     * machine is already gone, and the report says the same again.
     */
    async deleteInstanceInline({ goneReport, ...args }: InlineDeleteArgs): Promise<InlineDeleteOutcome> {
      const boundMs = provider(args.provider).inlineDeleteTimeoutMs ?? 0;
      if (boundMs <= 0) return { inline: false };
      await remove(args, boundMs);
      if (!goneReport || !deps.reportGone) return { inline: true };
      // A failed report is the runner's to send again, as one not taken within the budget is.
      const taken = deps.reportGone(goneReport).then(() => true, () => false);
      return { inline: true, reported: (await within(taken, goneReportBudget())) === true };
    },

    /** Whether the machine still runs; used to notice an ephemeral runner that finished while its webhook was lost. */
    async instanceStatus(args: DeleteInstanceArgs): Promise<ProviderInstanceStatus | 'gone'> {
      const target = provider(args.provider);
      try {
        const specs = await extraSpecsOf(target, args.name);
        const found = await target.getInstance(args.providerId ?? args.name, { controllerId: deps.controllerId, poolId: args.pool, ...specs });
        return found.status;
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw toActivityFailure(err);
      }
    },

    /** Unregisters the runner from GitHub. Busy is an answer, not an error. */
    async removeGitHubRunner(args: RemoveRunnerArgs): Promise<RemoveRunnerOutcome> {
      try {
        return await whileHeartbeating(() => removeRunnerAtGitHub(deps.github, args));
      } catch (err) {
        // A graceful delete must eventually unregister; credentials an operator fixes later must not strand it.
        throw toActivityFailure(err, { retryRejectedGitHubCalls: true });
      }
    },
  };
}

export type InstanceActivities = ReturnType<typeof createInstanceActivities>;

