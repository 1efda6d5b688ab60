/**
 * Activities of the runnerInstance workflow. Each one is a thin, idempotent step
 * over the provider and GitHub ports: safe to retry, safe to replay, and never
 * returning a secret (results are written to workflow history).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { scopeUrl, type GitHubPort, type RemoveRunnerOutcome, type RunnerCredential } from '../github/port';
import type { BootstrapInstance, ProviderInstanceStatus, ProviderPort } from '../providers/port';
import { isNotFound } from '../providers/port';
import type { InstanceSpec } from '../workflows/messages';
import { FAILURE_TYPES, toActivityFailure } from './failures';
import { mintedIn, type MintedCredential } from '../domain/minted-credential';
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
  sshKeys?: string[];
  caCertBundle?: string;
  runnerToolsTtlMs?: number;
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
}

export interface DeleteInstanceArgs {
  provider: string;
  name: string;
  pool: string;
  providerId?: string;
}

export type { RemoveRunnerArgs };

/** Callback tokens outlive the bootstrap window a little so a slow first report still gets through. */
const INSTANCE_TOKEN_MARGIN_MS = 10 * 60_000;

export function createInstanceActivities(deps: InstanceActivityDeps) {
  const tools = new RunnerToolsCache(deps.runnerToolsTtlMs);

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
  async function runnerCredential(gh: GitHubPort, args: CreateInstanceArgs): Promise<RunnerCredential> {
    if (args.spec.scaleSet) {
      const jit = await actionsFor(args.spec.github).generateJitConfig(args.spec.scaleSet.id, args.name, '_work');
      return { kind: 'jit', runnerId: jit.runnerId, encodedJitConfig: jit.encodedJitConfig };
    }
    return gh.createRunnerCredential({
      scope: args.spec.github.scope,
      name: args.name,
      labels: args.spec.labels,
      runnerGroupId: args.spec.runnerGroupId,
      workFolder: '_work',
      jit: args.spec.ephemeral,
    });
  }

  /**
   * Idempotent by instance name: a retried or replayed attempt first looks for the
   * machine an earlier attempt made, so one name never gets two machines.
   */
  async function create(args: CreateInstanceArgs, boundMs?: number): Promise<CreatedInstance> {
    const target = provider(args.provider);
    const ctx = Context.current();
    const runId = ctx.info.workflowExecution?.runId ?? '';
    const callCtx = { controllerId: deps.controllerId, poolId: args.pool, extraSpecs: args.spec.extraSpecs };
    // An earlier attempt's, from the workflow (an inline attempt's failure) or from this activity's heartbeats.
    const earlier = args.minted ?? mintedIn(ctx.info.heartbeatDetails);
    let minted: MintedCredential | undefined;
    const heartbeatDetails = () => (minted ? { minted } : undefined);
    try {
      return await timedAttempt(runnerCreateSeconds, { pool: args.pool, provider: args.provider }, () => whileHeartbeating(async (signal) => {
        const existing = await target.getInstance(args.name, { ...callCtx, signal }).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        if (existing && existing.status !== 'error') {
          return { providerId: existing.providerId, status: existing.status, reused: true, ...(earlier ? { sealedJitConfig: earlier.sealedJitConfig, githubRunnerId: earlier.githubRunnerId } : {}) };
        }
        if (existing) {
          // GARM: a machine in error is removed before trying again, so nothing half-made lingers.
          await target.deleteInstance(existing.providerId, { ...callCtx, signal });
        }

        const gh = deps.github.get(args.spec.github.credentials);
        const credential = await runnerCredential(gh, args);
        if (credential.kind === 'jit' && deps.sealSecret) {
          minted = { sealedJitConfig: deps.sealSecret(credential.encodedJitConfig), githubRunnerId: credential.runnerId };
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
          labels: args.spec.labels,
          jitConfigEnabled: credential.kind === 'jit',
          ...(credential.kind === 'jit' ? { jitConfig: credential.encodedJitConfig } : { registrationToken: credential.token }),
        };
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
      }, { ...(boundMs === undefined ? {} : { boundMs }), heartbeatDetails }));
    } catch (err) {
      throw withMinted(toActivityFailure(err), minted);
    }
  }

  async function remove(args: DeleteInstanceArgs, boundMs?: number): Promise<void> {
    const target = provider(args.provider);
    try {
      await timedAttempt(runnerDeleteSeconds, { pool: args.pool, provider: args.provider }, () =>
        whileHeartbeating(async (signal) => {
          try {
            await target.deleteInstance(args.providerId ?? args.name, { controllerId: deps.controllerId, poolId: args.pool, signal });
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
    observeRunner: createObserveRunner({ controllerId: deps.controllerId, provider, github: deps.github }),

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
     */
    async deleteInstanceInline(args: DeleteInstanceArgs): Promise<InlineDeleteOutcome> {
      const boundMs = provider(args.provider).inlineDeleteTimeoutMs ?? 0;
      if (boundMs <= 0) return { inline: false };
      await remove(args, boundMs);
      return { inline: true };
    },

    /** Whether the machine still runs; used to notice an ephemeral runner that finished while its webhook was lost. */
    async instanceStatus(args: DeleteInstanceArgs): Promise<ProviderInstanceStatus | 'gone'> {
      const target = provider(args.provider);
      try {
        const found = await target.getInstance(args.providerId ?? args.name, { controllerId: deps.controllerId, poolId: args.pool });
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

