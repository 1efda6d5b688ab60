/**
 * Runners as EC2 instances. Ownership is in tags (controller, pool, Name), the
 * runner credential only in user data.
 */
import { createHash } from 'node:crypto';
import {
  DescribeInstancesCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
  StartInstancesCommand,
  StopInstancesCommand,
  type Filter,
  type Instance,
  type _InstanceType,
} from '@aws-sdk/client-ec2';
import type { AwsEc2ProviderConfig } from '../../config/schema';
import { RotatingSecret } from '../../config/rotating-secret';
import {
  ProviderFaultError,
  ProviderNotFoundError,
  type BootstrapInstance,
  type ProviderCallContext,
  type ProviderInstance,
  type ProviderInstanceStatus,
  type ProviderPort,
} from '../port';
import { buildUserData } from './user-data';

export const TAG_CONTROLLER = 'runnerflow:controller';
export const TAG_POOL = 'runnerflow:pool';
export const TAG_NAME = 'Name';

/** States of machines that still exist; terminated and terminating ones are gone for us. */
const LIVE_STATES = ['pending', 'running', 'stopping', 'stopped'];
const INSTANCE_ID = /^i-[0-9a-f]+$/;
/**
 * How long an instance id must stay unknown to EC2 before a delete takes it as gone. EC2
 * usually shows a new instance within seconds; this leaves a wide margin, and a delete of a
 * machine that really is gone costs only a few retries within it.
 */
const UNSEEN_ID_GONE_AFTER_MS = 5 * 60_000;
/** Ids no delete asked about again for this long are dropped from memory. */
const UNSEEN_ID_FORGOTTEN_AFTER_MS = 60 * 60_000;
/** AWS answers that retrying will not fix. */
const PERMANENT_ERRORS = /^(AuthFailure|UnauthorizedOperation|InvalidAMIID|InvalidParameter|InvalidSubnetID|InvalidGroup|InvalidKeyPair|OptInRequired|Blocked)/;

const STATUS: Record<string, ProviderInstanceStatus> = { pending: 'running', running: 'running', stopping: 'stopped', stopped: 'stopped' };
const ARCH: Record<string, string> = { x86_64: 'amd64', arm64: 'arm64', i386: 'i386' };

export type AwsEc2ProviderOptions = Pick<AwsEc2ProviderConfig, 'name' | 'region' | 'endpoint' | 'subnetId' | 'securityGroupIds' | 'keyName' | 'accessKeyId' | 'secretAccessKey'>;

/** What tests replace: the EC2 client (to play EC2's propagation delays) and the clock. */
export interface AwsEc2ProviderDeps {
  client?: EC2Client;
  now?: () => number;
  /** How often static keys given as files are looked at for new values (`github.secretRecheck`). */
  secretRecheckMs?: number;
}

/** EC2's answers to keys it does not take: an unknown, deleted or deactivated key, or a wrong secret. */
const REFUSED_KEYS = /^(AuthFailure|InvalidClientTokenId|SignatureDoesNotMatch|UnrecognizedClientException)/;

/** Same name (and controller), same token: a retried RunInstances returns the first machine. */
export function clientTokenFor(controllerId: string, name: string): string {
  return `rf-${createHash('sha256').update(`${controllerId}\0${name}`).digest('hex').slice(0, 48)}`;
}

export class AwsEc2Provider implements ProviderPort {
  readonly name: string;
  private readonly client: EC2Client;
  private readonly now: () => number;
  /** Instance ids a delete found unknown to EC2, and when it first did (see terminate). */
  private readonly unseenSince = new Map<string, number>();
  /** Static keys given in the config; without them the SDK's default chain, which renews its own. */
  private readonly staticKeys: { id: RotatingSecret; secret: RotatingSecret } | undefined;

  constructor(
    private readonly config: AwsEc2ProviderOptions,
    env: NodeJS.ProcessEnv = process.env,
    deps: AwsEc2ProviderDeps = {},
  ) {
    this.name = config.name;
    if (Boolean(config.accessKeyId) !== Boolean(config.secretAccessKey)) {
      throw new ProviderFaultError(this.name, `provider ${this.name}: accessKeyId and secretAccessKey must be given together`, undefined, false);
    }
    this.now = deps.now ?? Date.now;
    const recheckMs = deps.secretRecheckMs ?? 10_000;
    this.staticKeys =
      config.accessKeyId && config.secretAccessKey
        ? { id: new RotatingSecret(config.accessKeyId, env, recheckMs), secret: new RotatingSecret(config.secretAccessKey, env, recheckMs) }
        : undefined;
    const keys = this.staticKeys;
    this.client =
      deps.client ??
      new EC2Client({
        region: config.region,
        endpoint: config.endpoint,
        // The SDK keeps credentials that carry no expiration for the client's whole life, so keys
        // rotated in their files would never be seen. Keys that say they expire now are asked for
        // at every request; RotatingSecret decides whether that looks at the files (a clock read
        // otherwise).
        credentials: keys ? async () => ({ accessKeyId: keys.id.read().value, secretAccessKey: keys.secret.read().value, expiration: new Date() }) : undefined,
        maxAttempts: 3,
      });
  }

  async createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance> {
    const existing = await this.findByName(bootstrap.name, ctx);
    if (existing) return this.toInstance(existing);
    const poolId = bootstrap.poolId || ctx.poolId || '';
    const out = await this.send('RunInstances', ctx, (abortSignal) =>
      this.client.send(
        new RunInstancesCommand({
          ImageId: bootstrap.image,
          InstanceType: bootstrap.flavor as _InstanceType,
          MinCount: 1,
          MaxCount: 1,
          SubnetId: this.config.subnetId,
          SecurityGroupIds: this.config.securityGroupIds.length > 0 ? this.config.securityGroupIds : undefined,
          KeyName: this.config.keyName,
          ClientToken: clientTokenFor(ctx.controllerId, bootstrap.name),
          UserData: Buffer.from(buildUserData(bootstrap)).toString('base64'),
          TagSpecifications: [
            {
              ResourceType: 'instance',
              Tags: [
                { Key: TAG_NAME, Value: bootstrap.name },
                { Key: TAG_CONTROLLER, Value: ctx.controllerId },
                { Key: TAG_POOL, Value: poolId },
              ],
            },
          ],
        }),
        { abortSignal },
      ),
    );
    const instance = out.Instances?.[0];
    if (!instance?.InstanceId) throw new ProviderFaultError(this.name, `RunInstances for ${bootstrap.name} returned no instance`);
    return this.toInstance(instance);
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    if (INSTANCE_ID.test(instanceId)) return this.terminate(instanceId, ctx);
    // A name: a create that failed before its id was known, so only the Name tag can find the machine.
    const instance = await this.findByName(instanceId, ctx);
    if (instance?.InstanceId) await this.terminate(instance.InstanceId, ctx);
  }

  async getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance> {
    const instance = await this.find(instanceId, ctx);
    if (!instance) throw new ProviderNotFoundError(this.name, instanceId);
    return this.toInstance(instance);
  }

  async listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    const filters: Filter[] = [{ Name: `tag:${TAG_CONTROLLER}`, Values: [ctx.controllerId] }];
    if (ctx.poolId) filters.push({ Name: `tag:${TAG_POOL}`, Values: [ctx.poolId] });
    return (await this.describe(filters, ctx)).map((i) => this.toInstance(i));
  }

  async startInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    const id = await this.requireId(instanceId, ctx);
    await this.send('StartInstances', ctx, (abortSignal) => this.client.send(new StartInstancesCommand({ InstanceIds: [id] }), { abortSignal }));
  }

  async stopInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    const id = await this.requireId(instanceId, ctx);
    await this.send('StopInstances', ctx, (abortSignal) => this.client.send(new StopInstancesCommand({ InstanceIds: [id] }), { abortSignal }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  /**
   * TerminateInstances by id, with no look-up first: right after RunInstances, EC2's
   * eventually consistent reads may not list the instance yet, and a delete that looked
   * first would skip a machine that is about to run.
   *
   * InvalidInstanceID.NotFound is not proof the machine is gone, for the same reason.
   * It counts as gone only when DescribeInstances shows it terminated (or terminating),
   * or once this provider has seen the id unknown for UNSEEN_ID_GONE_AFTER_MS: by then
   * an instance still being made would have become visible, so the id belongs to a
   * machine terminated long enough ago to have dropped out of the listings, or to none.
   * Until then the delete fails with a retryable fault and the caller tries again. The
   * clock starts at the first NotFound this process sees, because nothing EC2 says about
   * an unknown id tells its age; another worker (or a restart) starts its own, which can
   * only make the wait longer, never shorter.
   */
  private async terminate(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    try {
      await this.send('TerminateInstances', ctx, (abortSignal) => this.client.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }), { abortSignal }));
      this.unseenSince.delete(instanceId);
      return;
    } catch (err) {
      if (!isUnknownId(err)) throw err;
      if (/InvalidInstanceID\.Malformed/.test(err.message)) return;
    }
    const state = await this.stateOf(instanceId, ctx);
    if (state === 'terminated' || state === 'shutting-down') {
      this.unseenSince.delete(instanceId);
      return;
    }
    if (state !== undefined) {
      throw new ProviderFaultError(this.name, `TerminateInstances did not find ${instanceId}, which DescribeInstances shows ${state}: not yet visible to every EC2 endpoint`);
    }
    const now = this.now();
    for (const [id, since] of this.unseenSince) if (now - since > UNSEEN_ID_FORGOTTEN_AFTER_MS) this.unseenSince.delete(id);
    const since = this.unseenSince.get(instanceId) ?? now;
    this.unseenSince.set(instanceId, since);
    if (now - since >= UNSEEN_ID_GONE_AFTER_MS) {
      this.unseenSince.delete(instanceId);
      return;
    }
    throw new ProviderFaultError(
      this.name,
      `TerminateInstances failed: InvalidInstanceID.NotFound for ${instanceId}, unknown to EC2 for ${Math.round((now - since) / 1000)} s; ` +
        `an instance just made may not be visible yet, so it counts as gone only after ${UNSEEN_ID_GONE_AFTER_MS / 1000} s`,
    );
  }

  /** The instance's state in any state, terminated included; undefined when EC2 does not know the id. */
  private async stateOf(instanceId: string, ctx: ProviderCallContext): Promise<string | undefined> {
    try {
      const page = await this.send('DescribeInstances', ctx, (abortSignal) => this.client.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }), { abortSignal }));
      const instance = (page.Reservations ?? []).flatMap((r) => r.Instances ?? []).find((i) => i.InstanceId === instanceId);
      return instance ? (instance.State?.Name ?? 'unknown') : undefined;
    } catch (err) {
      if (isUnknownId(err)) return undefined;
      throw err;
    }
  }

  private async requireId(instanceId: string, ctx: ProviderCallContext): Promise<string> {
    const instance = await this.find(instanceId, ctx);
    if (!instance?.InstanceId) throw new ProviderNotFoundError(this.name, instanceId);
    return instance.InstanceId;
  }

  /** By EC2 instance id, or by Name tag (a create that failed before an id was known). */
  private async find(instanceId: string, ctx: ProviderCallContext): Promise<Instance | undefined> {
    if (!INSTANCE_ID.test(instanceId)) return this.findByName(instanceId, ctx);
    try {
      const found = await this.describe([{ Name: 'instance-id', Values: [instanceId] }], ctx);
      return found.find((i) => tagOf(i, TAG_CONTROLLER) === ctx.controllerId) ?? found[0];
    } catch (err) {
      if (isUnknownId(err)) return undefined;
      throw err;
    }
  }

  private async findByName(name: string, ctx: ProviderCallContext): Promise<Instance | undefined> {
    const found = await this.describe(
      [
        { Name: `tag:${TAG_NAME}`, Values: [name] },
        { Name: `tag:${TAG_CONTROLLER}`, Values: [ctx.controllerId] },
      ],
      ctx,
    );
    return found[0];
  }

  private async describe(filters: Filter[], ctx: ProviderCallContext): Promise<Instance[]> {
    const out: Instance[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.send('DescribeInstances', ctx, (abortSignal) =>
        this.client.send(new DescribeInstancesCommand({ Filters: [...filters, { Name: 'instance-state-name', Values: LIVE_STATES }], NextToken: nextToken }), { abortSignal }),
      );
      for (const reservation of page.Reservations ?? []) out.push(...(reservation.Instances ?? []));
      nextToken = page.NextToken;
    } while (nextToken);
    return out;
  }

  /**
   * One API call bounded by ctx.timeoutMs and ctx.signal. AWS errors become
   * ProviderFaultError naming the AWS error code; the abort reason passes through.
   */
  private async send<T>(operation: string, ctx: ProviderCallContext, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signals = [ctx.signal, ctx.timeoutMs !== undefined ? AbortSignal.timeout(ctx.timeoutMs) : undefined].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 0 ? AbortSignal.any(signals) : new AbortController().signal;
    try {
      return await call(signal);
    } catch (err) {
      if (ctx.signal?.aborted) throw ctx.signal.reason;
      if (signal.aborted) throw new ProviderFaultError(this.name, `${operation} timed out after ${ctx.timeoutMs} ms`);
      const e = err as { name?: string; Code?: string; message?: string };
      const code = e.Code ?? e.name ?? 'Error';
      if (REFUSED_KEYS.test(code)) {
        // Rotated keys are written one file after the other, or the old key was deleted before the
        // new one was written: look at both files before the next call, whatever the interval.
        this.staticKeys?.id.recheckSoon();
        this.staticKeys?.secret.recheckSoon();
      }
      throw new ProviderFaultError(this.name, `${operation} failed: ${code}`, e.message, !PERMANENT_ERRORS.test(code));
    }
  }

  private toInstance(instance: Instance): ProviderInstance {
    const state = instance.State?.Name ?? '';
    const addresses: ProviderInstance['addresses'] = [];
    if (instance.PrivateIpAddress) addresses.push({ address: instance.PrivateIpAddress, type: 'private' });
    if (instance.PublicIpAddress) addresses.push({ address: instance.PublicIpAddress, type: 'public' });
    return {
      providerId: instance.InstanceId!,
      name: tagOf(instance, TAG_NAME) ?? instance.InstanceId!,
      osType: instance.Platform?.toLowerCase() === 'windows' ? 'windows' : 'linux',
      osArch: ARCH[instance.Architecture ?? ''] ?? instance.Architecture,
      osName: instance.PlatformDetails,
      addresses,
      status: STATUS[state] ?? 'unknown',
      providerFault: instance.StateReason?.Code?.startsWith('Server.') ? instance.StateReason.Message : undefined,
      poolId: tagOf(instance, TAG_POOL) || undefined,
      ...(instance.LaunchTime ? { createdAt: instance.LaunchTime.toISOString() } : {}),
    };
  }
}

function isUnknownId(err: unknown): err is ProviderFaultError {
  return err instanceof ProviderFaultError && /InvalidInstanceID\.(NotFound|Malformed)/.test(err.message);
}

function tagOf(instance: Instance, key: string): string | undefined {
  return instance.Tags?.find((t) => t.Key === key)?.Value;
}
