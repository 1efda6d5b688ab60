import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../config/load';
import { registry as metrics } from '../../observability/metrics';
import { AwsEc2Provider } from '../../providers/aws-ec2/provider';
import { ExternalProvider } from '../../providers/external/provider';
import { FakeProvider } from '../../providers/fake';
import { LocalProcessProvider } from '../../providers/local-process/provider';
import { ProviderNotFoundError } from '../../providers/port';
import { createProviders, getProvider, UnknownProviderError } from '../../providers/registry';

describe('provider registry', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-registry-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds one provider of the right kind per configured entry', () => {
    const config = parseConfig({
      providers: [
        { type: 'fake', name: 'f', stateDir: dir },
        { type: 'local-process', name: 'l', workDir: join(dir, 'l') },
        { type: 'external', name: 'e', executable: '/bin/true' },
        { type: 'aws-ec2', name: 'a', region: 'us-east-1', endpoint: 'http://127.0.0.1:9' },
      ],
    });
    const providers = createProviders(config, {});
    expect([...providers.keys()]).toEqual(['f', 'l', 'e', 'a']);
    expect(getProvider(providers, 'f')).toBeInstanceOf(FakeProvider);
    expect(getProvider(providers, 'l')).toBeInstanceOf(LocalProcessProvider);
    expect(getProvider(providers, 'e')).toBeInstanceOf(ExternalProvider);
    expect(getProvider(providers, 'a')).toBeInstanceOf(AwsEc2Provider);
    expect(getProvider(providers, 'e').name).toBe('e');
  });

  it('falls back to one local-process provider named "local"', () => {
    const providers = createProviders(parseConfig({}), {});
    expect([...providers.keys()]).toEqual(['local']);
    expect(getProvider(providers, 'local')).toBeInstanceOf(LocalProcessProvider);
  });

  it('names the unknown provider and the known ones', () => {
    const providers = createProviders(parseConfig({ providers: [{ type: 'fake', name: 'f', stateDir: dir }] }), {});
    expect(() => getProvider(providers, 'gcp')).toThrow(UnknownProviderError);
    expect(() => getProvider(providers, 'gcp')).toThrow('unknown provider "gcp"; configured providers: "f"');
  });

  it('times every operation into the provider metrics, by outcome', async () => {
    const providers = createProviders(parseConfig({ providers: [{ type: 'fake', name: 'timed', stateDir: dir }] }), {});
    const provider = getProvider(providers, 'timed');
    await provider.listInstances({ controllerId: 'c' });
    await expect(provider.getInstance('nope', { controllerId: 'c' })).rejects.toBeInstanceOf(ProviderNotFoundError);
    const text = await metrics.metrics();
    expect(text).toMatch(/runnerflow_provider_operation_seconds_count\{provider="timed",operation="listInstances",outcome="ok"\} 1/);
    expect(text).toMatch(/runnerflow_provider_operation_seconds_count\{provider="timed",operation="getInstance",outcome="not_found"\} 1/);
  });
});
