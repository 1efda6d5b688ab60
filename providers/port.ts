/**
 * The provider port: the only way runnerflow touches machines.
 *
 * Shapes follow GARM's provider interface (garm-provider-common) so that GARM's
 * external provider executables plug in unchanged, and every provider is held to
 * the same contract test suite (test/providers/contract.ts).
 */
import { eachConcurrently } from '../domain/concurrency';

export type OsType = 'linux' | 'windows';
export type OsArch = 'amd64' | 'arm64' | 'arm' | 'i386';
export type ProviderInstanceStatus = 'running' | 'stopped' | 'error' | 'unknown';

/** A runner tools download (GitHub's `runner downloads` entry). */
export interface RunnerTool {
  os: string;
  architecture: string;
  download_url: string;
  filename: string;
  sha256_checksum?: string;
  temp_download_token?: string;
}

/**
 * Everything a provider needs to bring up one runner machine.
 * `jitConfig` / `registrationToken` and `instanceToken` are secrets: a provider
 * hands them to the machine and must never log them.
 */
export interface BootstrapInstance {
  name: string;
  poolId: string;
  tools: RunnerTool[];
  repoUrl: string;
  callbackUrl: string;
  metadataUrl: string;
  instanceToken: string;
  sshKeys: string[];
  extraSpecs: Record<string, unknown>;
  githubRunnerGroup: string;
  /** PEM bundle; providers that speak GARM's protocol send it base64-encoded. */
  caCertBundle?: string;
  arch: OsArch;
  osType: OsType;
  flavor: string;
  image: string;
  labels: string[];
  jitConfigEnabled: boolean;
  /** Encoded JIT runner config (ephemeral JIT pools). */
  jitConfig?: string;
  /** Registration token (pools that register with config.sh). */
  registrationToken?: string;
  userDataOptions?: { disableUpdatesOnBoot?: boolean; extraPackages?: string[]; enableBootDebug?: boolean };
}

export interface ProviderInstance {
  /** The provider's own id; falls back to the instance name when a provider has none. */
  providerId: string;
  name: string;
  osType?: OsType | string;
  osName?: string;
  osVersion?: string;
  osArch?: OsArch | string;
  addresses: { address: string; type: 'public' | 'private' }[];
  status: ProviderInstanceStatus;
  /** The provider's own description of a fault, for operators. */
  providerFault?: string;
  poolId?: string;
  /**
   * When the machine was created (ISO 8601), if the provider knows. The orphan sweep
   * deletes a machine no workflow ever knew only once this is older than its grace period.
   */
  createdAt?: string;
}

/** Per-call context: which controller and pool the call is for, and how to give up. */
export interface ProviderCallContext {
  controllerId: string;
  poolId?: string;
  extraSpecs?: Record<string, unknown>;
  /** Aborted when the caller (activity cancellation, force delete) gives up. */
  signal?: AbortSignal;
  /** Upper bound for this call; the provider kills whatever it runs after it. */
  timeoutMs?: number;
}

export interface ProviderPort {
  /** Name of this provider as configured. */
  readonly name: string;
  /**
   * A create this provider usually answers well within: the first attempt then runs
   * inline, as a local activity in the worker that runs the runner's workflow task,
   * cut off at this bound. Absent or 0: every attempt is an ordinary activity.
   */
  readonly inlineCreateTimeoutMs?: number;
  /** The same for the first attempt of a graceful delete. */
  readonly inlineDeleteTimeoutMs?: number;
  /**
   * ListInstances needs ctx.poolId: GARM's external providers refuse to list without a
   * pool, so a pass over all machines lists pool by pool (see listMachines).
   */
  readonly listsPerPool?: boolean;
  /**
   * Create the machine. Creating twice with the same name must not make a second machine:
   * implementations either return the existing one or throw ProviderDuplicateError.
   */
  createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance>;
  /** Delete by provider id (or name). Succeeds when the machine is already gone. */
  deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void>;
  /** Throws ProviderNotFoundError when there is no such machine. */
  getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance>;
  /** Instances of this controller; restricted to one pool when ctx.poolId is set. */
  listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]>;
  startInstance?(instanceId: string, ctx: ProviderCallContext): Promise<void>;
  stopInstance?(instanceId: string, ctx: ProviderCallContext): Promise<void>;
  /** Releases resources held by the provider object itself (child processes, clients). */
  close?(): Promise<void>;
}

/** What a pass over one provider's machines saw: see listMachines. */
export interface MachineListing {
  machines: ProviderInstance[];
  /** ListInstances calls that answered. */
  listings: number;
  /** Pools whose listing failed: their machines are missing from `machines`. */
  failed: { poolId: string; error: unknown }[];
}

const POOL_LISTINGS_AT_ONCE = 4;

/**
 * This controller's machines on one provider: one ListInstances, or, for a provider
 * that lists per pool, one per pool of `pools`, merged. A machine listed under a pool
 * carries that pool even when the provider's answer did not say, because such a
 * provider wants the pool again to get or delete it. One pool's failure does not
 * hide the others' machines; throws only when nothing could be listed.
 */
export async function listMachines(target: ProviderPort, pools: Iterable<string>, ctx: ProviderCallContext): Promise<MachineListing> {
  if (!target.listsPerPool) return { machines: await target.listInstances(ctx), listings: 1, failed: [] };
  const poolIds = [...new Set(pools)].filter((p) => p !== '').sort();
  const listing: MachineListing = { machines: [], listings: 0, failed: [] };
  const seen = new Set<string>();
  await eachConcurrently(
    poolIds,
    POOL_LISTINGS_AT_ONCE,
    async (poolId) => {
      try {
        const machines = await target.listInstances({ ...ctx, poolId });
        listing.listings += 1;
        for (const machine of machines) {
          // A provider that ignores the pool it is given answers every pool with the same machines.
          const key = machine.providerId || machine.name;
          if (seen.has(key)) continue;
          seen.add(key);
          listing.machines.push({ ...machine, poolId: machine.poolId ?? poolId });
        }
      } catch (err) {
        listing.failed.push({ poolId, error: err });
      }
    },
    ctx.signal,
  );
  if (ctx.signal?.aborted) throw ctx.signal.reason;
  if (listing.listings === 0 && listing.failed.length > 0) throw listing.failed[0]!.error;
  return listing;
}

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly provider: string,
    /** The provider's own words (stderr, API error body), for operators. */
    readonly providerMessage?: string,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export class ProviderNotFoundError extends ProviderError {
  constructor(provider: string, readonly instanceId: string, providerMessage?: string) {
    super(`instance ${instanceId} not found in provider ${provider}`, provider, providerMessage);
    this.name = 'ProviderNotFoundError';
  }
}

export class ProviderDuplicateError extends ProviderError {
  constructor(provider: string, readonly instanceName: string, providerMessage?: string) {
    super(`instance ${instanceName} already exists in provider ${provider}`, provider, providerMessage);
    this.name = 'ProviderDuplicateError';
  }
}

/** A fault the provider reported (bad credentials, quota, crash, bad output). */
export class ProviderFaultError extends ProviderError {
  constructor(provider: string, message: string, providerMessage?: string, readonly retryable = true) {
    super(message, provider, providerMessage);
    this.name = 'ProviderFaultError';
  }
}

export function isNotFound(err: unknown): err is ProviderNotFoundError {
  return err instanceof ProviderNotFoundError;
}
