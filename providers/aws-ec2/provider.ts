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
import { resolveSecret } from '../../config/load';
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
/** AWS answers that retrying will not fix. */
const PERMANENT_ERRORS = /^(AuthFailure|UnauthorizedOperation|InvalidAMIID|InvalidParameter|InvalidSubnetID|InvalidGroup|InvalidKeyPair|OptInRequired|Blocked)/;

const STATUS: Record<string, ProviderInstanceStatus> = { pending: 'running', running: 'running', stopping: 'stopped', stopped: 'stopped' };
const ARCH: Record<string, string> = { x86_64: 'amd64', arm64: 'arm64', i386: 'i386' };

export type AwsEc2ProviderOptions = Pick<AwsEc2ProviderConfig, 'name' | 'region' | 'endpoint' | 'subnetId' | 'securityGroupIds' | 'keyName' | 'accessKeyId' | 'secretAccessKey'>;

/** Same name (and controller), same token: a retried RunInstances returns the first machine. */
export function clientTokenFor(controllerId: string, name: string): string {
  return `rf-${createHash('sha256').update(`${controllerId}\0${name}`).digest('hex').slice(0, 48)}`;
}

export class AwsEc2Provider implements ProviderPort {
  readonly name: string;
  private readonly client: EC2Client;

  constructor(
    private readonly config: AwsEc2ProviderOptions,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = config.name;
    const accessKeyId = resolveSecret(config.accessKeyId, env);
    const secretAccessKey = resolveSecret(config.secretAccessKey, env);
    if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) {
      throw new ProviderFaultError(this.name, `provider ${this.name}: accessKeyId and secretAccessKey must be given together`, undefined, false);
    }
    this.client = new EC2Client({
      region: config.region,
      endpoint: config.endpoint,
      credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
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
    const instance = await this.find(instanceId, ctx);
    if (!instance?.InstanceId) return;
    try {
      await this.send('TerminateInstances', ctx, (abortSignal) => this.client.send(new TerminateInstancesCommand({ InstanceIds: [instance.InstanceId!] }), { abortSignal }));
    } catch (err) {
      // Gone between the look-up and the terminate: that is what we wanted.
      if (err instanceof ProviderFaultError && /InvalidInstanceID\.NotFound/.test(err.message)) return;
      throw err;
    }
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
      if (err instanceof ProviderFaultError && /InvalidInstanceID\.(NotFound|Malformed)/.test(err.message)) return undefined;
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

function tagOf(instance: Instance, key: string): string | undefined {
  return instance.Tags?.find((t) => t.Key === key)?.Value;
}
