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

  const oneOfEachKind = [
    { type: 'fake', name: 'f', stateDir: dir },
    { type: 'local-process', name: 'l', workDir: join(dir, 'l') },
    { type: 'external', name: 'e', executable: '/bin/true' },
    { type: 'aws-ec2', name: 'a', region: 'us-east-1', endpoint: 'http://127.0.0.1:9' },
  ];

  it('builds one provider of the right kind per configured entry', () => {
    const config = parseConfig({ providers: oneOfEachKind });
    const providers = createProviders(config, {});
    expect([...providers.keys()]).toEqual(['f', 'l', 'e', 'a']);
    expect(getProvider(providers, 'f')).toBeInstanceOf(FakeProvider);
    expect(getProvider(providers, 'l')).toBeInstanceOf(LocalProcessProvider);
    expect(getProvider(providers, 'e')).toBeInstanceOf(ExternalProvider);
    expect(getProvider(providers, 'a')).toBeInstanceOf(AwsEc2Provider);
    expect(getProvider(providers, 'e').name).toBe('e');
  });

  it('gives each provider its inline create bound: per kind by default, as configured otherwise', () => {
    const config = parseConfig({
      providers: [
        ...oneOfEachKind,
        { type: 'external', name: 'quick', executable: '/bin/true', inlineCreateTimeout: '1500ms' },
        { type: 'local-process', name: 'off', inlineCreateTimeout: 0 },
      ],
    });
    const bounds = Object.fromEntries([...createProviders(config, {})].map(([name, p]) => [name, p.inlineCreateTimeoutMs]));
    expect(bounds).toEqual({ f: 2_000, l: 2_000, e: 0, a: 5_000, quick: 1_500, off: 0 });
  });

  it('gives each provider its inline delete bound the same way, apart from its create bound', () => {
    const config = parseConfig({
      providers: [
        ...oneOfEachKind,
        { type: 'external', name: 'quick', executable: '/bin/true', inlineDeleteTimeout: '1s' },
        { type: 'aws-ec2', name: 'off', region: 'us-east-1', inlineDeleteTimeout: 0 },
      ],
    });
    const bounds = Object.fromEntries([...createProviders(config, {})].map(([name, p]) => [name, [p.inlineCreateTimeoutMs, p.inlineDeleteTimeoutMs]]));
    expect(bounds).toEqual({ f: [2_000, 2_000], l: [2_000, 2_000], e: [0, 0], a: [5_000, 5_000], quick: [0, 1_000], off: [5_000, 0] });
    expect(() => parseConfig({ providers: [{ type: 'local-process', name: 'l', inlineDeleteTimeout: '9s' }] })).toThrow(/providers\.0\.inlineDeleteTimeout.*at most 8000 ms/s);
  });

  it('refuses an inline create bound longer than one workflow task allows, naming the field', () => {
    expect(() => parseConfig({ providers: [{ type: 'aws-ec2', name: 'a', region: 'us-east-1', inlineCreateTimeout: '20s' }] })).toThrow(
      /providers\.0\.inlineCreateTimeout.*at most 8000 ms/s,
    );
    expect(() => parseConfig({ providers: [{ type: 'fake', name: 'f', stateDir: dir, inlineCreateTimeout: 'soon' }] })).toThrow(/providers\.0\.inlineCreateTimeout.*not a duration/s);
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
