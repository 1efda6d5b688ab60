/**
 * Static AWS keys rotated in their files while the provider runs: EC2 (moto with IAM's checks on)
 * refuses a deleted key, and the provider uses the key written in its place from its next call,
 * with no restart. Keys are looked at every interval, and at once after EC2 refused them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwsEc2Provider } from '../../providers/aws-ec2/provider';
import { ProviderFaultError } from '../../providers/port';
import { startMoto, type MotoServer } from './support/moto';

// The IAM set-up below is served unauthenticated; every request after it must be signed with a key IAM knows.
const SETUP_REQUESTS = 3;
const REFUSED_KEY = { id: 'AKIAREVOKED000000000', secret: 'a-secret-of-a-deleted-key' };

let moto: MotoServer;
let validKey: { id: string; secret: string };
let dir: string;
const ctx = { controllerId: 'ctl-key-rotation', poolId: 'pool-k' };

/** One IAM Query API call, during the unauthenticated set-up: moto routes by the credential scope, and checks no signature yet. */
async function iam(params: Record<string, string>): Promise<string> {
  const res = await fetch(moto.endpoint, {
    method: 'POST',
    headers: {
      authorization: 'AWS4-HMAC-SHA256 Credential=AKIASETUP000000000000/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ Version: '2010-05-08', ...params }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`IAM ${params.Action} failed: ${res.status} ${text}`);
  return text;
}

beforeAll(async () => {
  moto = await startMoto({ unauthenticatedRequests: SETUP_REQUESTS });
  await iam({ Action: 'CreateUser', UserName: 'runnerflow' });
  await iam({
    Action: 'PutUserPolicy',
    UserName: 'runnerflow',
    PolicyName: 'ec2',
    PolicyDocument: JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'ec2:*', Resource: '*' }] }),
  });
  const created = await iam({ Action: 'CreateAccessKey', UserName: 'runnerflow' });
  validKey = { id: /<AccessKeyId>([^<]+)</.exec(created)![1]!, secret: /<SecretAccessKey>([^<]+)</.exec(created)![1]! };
  dir = mkdtempSync(join(tmpdir(), 'aws-keys-'));
}, 300_000);
afterAll(async () => {
  await moto?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

function providerWithKeyFiles(name: string, key: { id: string; secret: string }, secretRecheckMs: number) {
  const files = { id: join(dir, `${name}-id`), secret: join(dir, `${name}-secret`) };
  const write = (next: { id: string; secret: string }) => {
    writeFileSync(files.id, `${next.id}\n`);
    writeFileSync(files.secret, `${next.secret}\n`);
  };
  write(key);
  const provider = new AwsEc2Provider(
    { name, region: 'us-east-1', endpoint: moto.endpoint, securityGroupIds: [], accessKeyId: { file: files.id }, secretAccessKey: { file: files.secret } },
    {},
    { secretRecheckMs },
  );
  return { provider, write };
}

const refusal = (provider: AwsEc2Provider) => provider.listInstances(ctx).then(() => undefined, (err: unknown) => err);

describe('static AWS keys given as files', () => {
  it('are read again at once after EC2 refused them: the key written in place of a deleted one works from the next call', async () => {
    // Ten minutes between looks: only EC2's refusal can make the provider read the files this soon.
    const { provider, write } = providerWithKeyFiles('refused', REFUSED_KEY, 10 * 60_000);
    const err = await refusal(provider);
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect((err as Error).message).toContain('DescribeInstances failed: AuthFailure');
    expect((err as Error).message).not.toContain(REFUSED_KEY.secret);

    write(validKey);
    expect(await provider.listInstances(ctx)).toEqual([]);
    await provider.close();
  });

  it('are looked at again every interval, so a rotation needs no refusal and no restart', async () => {
    const { provider, write } = providerWithKeyFiles('interval', validKey, 200);
    expect(await provider.listInstances(ctx)).toEqual([]);

    // The operator writes a key EC2 does not know: seen within the interval (and refused).
    write(REFUSED_KEY);
    await sleep(300);
    expect(((await refusal(provider)) as Error).message).toContain('AuthFailure');

    write(validKey);
    await sleep(300);
    expect(await provider.listInstances(ctx)).toEqual([]);
    await provider.close();
  });
});
