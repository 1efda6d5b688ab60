import {
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  EC2Client,
  type DescribeInstancesCommandOutput,
  type RunInstancesCommandOutput,
} from '@aws-sdk/client-ec2';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwsEc2Provider, clientTokenFor, TAG_CONTROLLER, TAG_NAME, TAG_POOL, type AwsEc2ProviderOptions } from '../../providers/aws-ec2/provider';
import { buildUserData, shellQuote } from '../../providers/aws-ec2/user-data';
import { ProviderFaultError, ProviderNotFoundError } from '../../providers/port';
import { bootstrapFor, TEST_INSTANCE_TOKEN, TEST_JIT_CONFIG } from './bootstrap';
import { runProviderContract } from './contract';
import { startMoto, type MotoServer } from './support/moto';

const CREDENTIAL_ENV = { TEST_AWS_KEY: 'testing-key', TEST_AWS_SECRET: 'testing-secret' };
let moto: MotoServer | undefined;
let motoStarting: Promise<MotoServer> | undefined;

/** One moto_server for both suites in this file. */
async function motoEndpoint(): Promise<string> {
  motoStarting ??= startMoto();
  moto = await motoStarting;
  return moto.endpoint;
}

function options(endpoint: string, name = 'ec2'): AwsEc2ProviderOptions {
  return { name, region: 'us-east-1', endpoint, securityGroupIds: [], accessKeyId: { env: 'TEST_AWS_KEY' }, secretAccessKey: { env: 'TEST_AWS_SECRET' } };
}

afterAll(async () => {
  await moto?.stop();
}, 30_000);

runProviderContract('aws-ec2 (moto)', async () => ({ provider: new AwsEc2Provider(options(await motoEndpoint()), CREDENTIAL_ENV) }));

describe('aws-ec2 provider', () => {
  let provider: AwsEc2Provider;
  let ec2: EC2Client;
  const ctx = { controllerId: 'ctl-ec2', poolId: 'pool-e' };

  beforeAll(async () => {
    const endpoint = await motoEndpoint();
    provider = new AwsEc2Provider(options(endpoint), CREDENTIAL_ENV);
    ec2 = new EC2Client({ region: 'us-east-1', endpoint, credentials: { accessKeyId: 'testing-key', secretAccessKey: 'testing-secret' } });
  }, 300_000);
  afterAll(async () => {
    for (const i of await provider.listInstances({ controllerId: ctx.controllerId })) await provider.deleteInstance(i.providerId, ctx);
    await provider.close();
    ec2.destroy();
  });

  it('runs the pool image and flavor, tagged with controller, pool and name', async () => {
    const created = await provider.createInstance(bootstrapFor('ec2-tags', 'pool-e', { image: 'ami-0abcdef1', flavor: 't3.small' }), ctx);
    const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [created.providerId] }));
    const instance = described.Reservations?.[0]?.Instances?.[0];
    expect(instance).toMatchObject({ ImageId: 'ami-0abcdef1', InstanceType: 't3.small' });
    const tags = Object.fromEntries((instance?.Tags ?? []).map((t) => [t.Key, t.Value]));
    expect(tags).toEqual({ [TAG_NAME]: 'ec2-tags', [TAG_CONTROLLER]: 'ctl-ec2', [TAG_POOL]: 'pool-e' });
    expect(created).toMatchObject({ name: 'ec2-tags', status: 'running', poolId: 'pool-e', osType: 'linux' });
  });

  it('keeps the JIT config out of user data and tags: the machine fetches it from the metadata service with its instance token', async () => {
    const created = await provider.createInstance(bootstrapFor('ec2-secret', 'pool-e'), ctx);
    const attr = await ec2.send(new DescribeInstanceAttributeCommand({ InstanceId: created.providerId, Attribute: 'userData' }));
    const userData = Buffer.from(attr.UserData?.Value ?? '', 'base64').toString('utf8');
    // Anyone allowed to describe the instance reads user data: the JIT config holds the runner's key.
    expect(userData).not.toContain(TEST_JIT_CONFIG);
    expect(userData).toContain(`INSTANCE_TOKEN=${shellQuote(TEST_INSTANCE_TOKEN)}`);
    expect(userData).toContain('JIT_FROM_METADATA=1');
    expect(userData).toContain('"${METADATA_URL%/}/credentials/$file"');
    const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [created.providerId] }));
    const tagText = JSON.stringify(described.Reservations?.[0]?.Instances?.[0]?.Tags);
    expect(tagText).not.toContain(TEST_JIT_CONFIG);
    expect(tagText).not.toContain(TEST_INSTANCE_TOKEN);
  });

  it('finds, stops and deletes a machine by name when no provider id is known', async () => {
    const created = await provider.createInstance(bootstrapFor('ec2-byname', 'pool-e'), ctx);
    expect((await provider.getInstance('ec2-byname', ctx)).providerId).toBe(created.providerId);
    await provider.stopInstance('ec2-byname', ctx);
    expect((await provider.getInstance(created.providerId, ctx)).status).toBe('stopped');
    await provider.deleteInstance('ec2-byname', ctx);
    await expect(provider.getInstance(created.providerId, ctx)).rejects.toBeInstanceOf(ProviderNotFoundError);
  });

  it('treats an unknown instance id as not found', async () => {
    await expect(provider.getInstance('i-0123456789abcdef0', ctx)).rejects.toBeInstanceOf(ProviderNotFoundError);
  });

  it("does not see another controller's machine by id", async () => {
    const other = await provider.createInstance(bootstrapFor('ec2-foreign', 'pool-e'), { controllerId: 'ctl-foreign' });
    expect((await provider.listInstances(ctx)).map((i) => i.providerId)).not.toContain(other.providerId);
    await provider.deleteInstance(other.providerId, { controllerId: 'ctl-foreign' });
  });

  it('derives one stable client token per controller and name', () => {
    expect(clientTokenFor('c', 'runner-1')).toBe(clientTokenFor('c', 'runner-1'));
    expect(clientTokenFor('c', 'runner-1')).not.toBe(clientTokenFor('c', 'runner-2'));
    expect(clientTokenFor('c', 'runner-1')).not.toBe(clientTokenFor('d', 'runner-1'));
    expect(clientTokenFor('c', 'x'.repeat(500)).length).toBeLessThanOrEqual(64);
  });

  it('reports an unreachable endpoint as a ProviderFaultError within ctx.timeoutMs', async () => {
    const unreachable = new AwsEc2Provider(options('http://127.0.0.1:9'), CREDENTIAL_ENV);
    const err = await unreachable.listInstances({ ...ctx, timeoutMs: 2000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect((err as Error).message).toMatch(/DescribeInstances (failed|timed out)/);
    await unreachable.close();
  });

  it('rejects half-given static credentials', () => {
    expect(() => new AwsEc2Provider({ ...options('http://127.0.0.1:9'), secretAccessKey: undefined }, CREDENTIAL_ENV)).toThrow(/must be given together/);
  });
});

/**
 * EC2's eventual consistency, which moto does not have: ids of instances just made are
 * unknown to every call until released, or only to TerminateInstances.
 */
class PropagationDelay {
  /** While set, every instance RunInstances makes starts out unseen. */
  hideNewInstances = false;
  readonly unseen = new Set<string>();
  readonly unknownToTerminate = new Set<string>();

  install(client: EC2Client): EC2Client {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const ids = (args.input as { InstanceIds?: string[] }).InstanceIds ?? [];
        const command = context.commandName;
        const unknown = ids.find((id) => this.unseen.has(id) || (command === 'TerminateInstancesCommand' && this.unknownToTerminate.has(id)));
        if (unknown && (command === 'TerminateInstancesCommand' || command === 'DescribeInstancesCommand')) {
          throw Object.assign(new Error(`The instance ID '${unknown}' does not exist`), { name: 'InvalidInstanceID.NotFound', Code: 'InvalidInstanceID.NotFound' });
        }
        const result = await next(args);
        if (command === 'RunInstancesCommand' && this.hideNewInstances) {
          for (const i of (result.output as RunInstancesCommandOutput).Instances ?? []) this.unseen.add(i.InstanceId!);
        }
        if (command === 'DescribeInstancesCommand') {
          for (const r of (result.output as DescribeInstancesCommandOutput).Reservations ?? []) r.Instances = (r.Instances ?? []).filter((i) => !this.unseen.has(i.InstanceId!));
        }
        return result;
      },
      { step: 'initialize', name: 'ec2PropagationDelay' },
    );
    return client;
  }
}

describe('aws-ec2 provider under EC2 eventual consistency', () => {
  let endpoint: string;
  let ec2: EC2Client;
  const ctx = { controllerId: 'ctl-ec2-lag', poolId: 'pool-lag' };
  const stateOf = async (id: string) => (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations?.[0]?.Instances?.[0]?.State?.Name;
  const lagging = (now?: () => number) => {
    const delay = new PropagationDelay();
    const client = delay.install(new EC2Client({ region: 'us-east-1', endpoint, credentials: { accessKeyId: 'testing-key', secretAccessKey: 'testing-secret' } }));
    return { delay, provider: new AwsEc2Provider(options(endpoint, 'ec2-lag'), CREDENTIAL_ENV, { client, ...(now ? { now } : {}) }) };
  };
  const failure = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err);
  /** The delete is refused as retryable while EC2 hides the machine, and terminates it once `reveal` lets EC2 show it. */
  const deleteWaitsUntilVisible = async (provider: AwsEc2Provider, id: string, reveal: () => void): Promise<Error> => {
    const err = await failure(provider.deleteInstance(id, ctx));
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect((err as ProviderFaultError).retryable).toBe(true);
    expect(await stateOf(id)).toBe('running');
    reveal();
    await provider.deleteInstance(id, ctx);
    expect(['shutting-down', 'terminated']).toContain(await stateOf(id));
    return err as Error;
  };

  beforeAll(async () => {
    endpoint = await motoEndpoint();
    ec2 = new EC2Client({ region: 'us-east-1', endpoint, credentials: { accessKeyId: 'testing-key', secretAccessKey: 'testing-secret' } });
  }, 300_000);
  afterAll(() => ec2.destroy());

  it('does not confirm a delete right after the create while EC2 does not list the machine yet, and terminates it once it does', async () => {
    const { delay, provider } = lagging();
    delay.hideNewInstances = true;
    const created = await provider.createInstance(bootstrapFor('ec2-lag-new', 'pool-lag'), ctx);
    delay.hideNewInstances = false;

    const err = await deleteWaitsUntilVisible(provider, created.providerId, () => delay.unseen.delete(created.providerId));
    expect(err.message).toContain('InvalidInstanceID.NotFound');
    await provider.close();
  });

  it('does not take NotFound from TerminateInstances as gone while DescribeInstances shows the machine', async () => {
    const { delay, provider } = lagging();
    const created = await provider.createInstance(bootstrapFor('ec2-lag-terminate', 'pool-lag'), ctx);
    delay.unknownToTerminate.add(created.providerId);

    await deleteWaitsUntilVisible(provider, created.providerId, () => delay.unknownToTerminate.delete(created.providerId));
    await provider.close();
  });

  it('takes an id as gone at once when EC2 shows it terminated, and after five minutes of not knowing it otherwise', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const { delay, provider } = lagging(() => now);
    const created = await provider.createInstance(bootstrapFor('ec2-lag-gone', 'pool-lag'), ctx);
    await provider.deleteInstance(created.providerId, ctx);
    delay.unknownToTerminate.add(created.providerId);
    await provider.deleteInstance(created.providerId, ctx);

    const unknown = 'i-0123456789abcdef0';
    expect(await failure(provider.deleteInstance(unknown, ctx))).toBeInstanceOf(ProviderFaultError);
    now += 4 * 60_000;
    expect(await failure(provider.deleteInstance(unknown, ctx))).toBeInstanceOf(ProviderFaultError);
    now += 60_000;
    await provider.deleteInstance(unknown, ctx);
    await provider.close();
  });
});

describe('EC2 user data', () => {
  it('quotes every value so a hostile label cannot run commands', () => {
    const script = buildUserData(bootstrapFor('ud', 'p', { labels: ["x'; rm -rf / #"] }));
    expect(script).toContain(`LABELS='x'\\''; rm -rf / #'`);
  });

  it('registers with config.sh and a registration token fetched from the metadata service, never written into user data', () => {
    const script = buildUserData(bootstrapFor('ud', 'p', { jitConfig: undefined, registrationToken: 'REG-TOKEN-1' }));
    // Jobs on the machine can read user data back: the token, good for the whole scope, stays out.
    expect(script).not.toContain('REG-TOKEN-1');
    expect(script).toContain(`METADATA_URL='http://127.0.0.1:9/api/v1/metadata'`);
    expect(script).toContain('curl -fsS -H "Authorization: Bearer $INSTANCE_TOKEN" "${METADATA_URL%/}/runner-registration-token/"');
    expect(script).toContain('./config.sh --unattended --ephemeral');
    expect(execFileSync('bash', ['-n'], { input: script }).toString()).toBe('');
  });

  it('writes the registration token into user data only when there is no metadata service to fetch it from', () => {
    const script = buildUserData(bootstrapFor('ud', 'p', { jitConfig: undefined, registrationToken: 'REG-TOKEN-1', metadataUrl: '' }));
    expect(script).toContain(`REGISTRATION_TOKEN='REG-TOKEN-1'`);
  });

  it('writes the JIT config into user data only when there is no metadata service to fetch it from', () => {
    const script = buildUserData(bootstrapFor('ud', 'p', { metadataUrl: '' }));
    expect(script).toContain(`JIT_CONFIG=${shellQuote(TEST_JIT_CONFIG)}`);
    expect(script).toContain('JIT_FROM_METADATA=0');
    expect(script).toContain('./run.sh --jitconfig "$JIT_CONFIG"');
    expect(execFileSync('bash', ['-n'], { input: script }).toString()).toBe('');
  });

  it('fetches the three JIT files into the runner directory, readable by the runner alone, then starts run.sh without --jitconfig', () => {
    const script = buildUserData(bootstrapFor('ud', 'p'));
    expect(script).toContain("JIT_CONFIG=''");
    const fetchAt = script.indexOf('for file in runner credentials credentials_rsaparams; do');
    expect(fetchAt).toBeGreaterThan(script.indexOf('cd "$RUNNER_HOME"'));
    expect(script.slice(fetchAt - 40, fetchAt)).toContain('umask 077');
    expect(script).toContain('chown runner:runner .runner .credentials .credentials_rsaparams');
    expect(script.slice(fetchAt)).toMatch(/exec sudo -u runner -- \.\/run\.sh\n/);
    expect(execFileSync('bash', ['-n'], { input: script }).toString()).toBe('');
  });

  it('downloads the runner tool matching the machine and checks its sha256', () => {
    const script = buildUserData(bootstrapFor('ud', 'p'));
    expect(script).toContain(`TOOL_URL='https://example.invalid/runner.tar.gz'`);
    expect(script).toContain('sha256sum -c -');
  });
});
