/**
 * Builds the configured providers by name. With none configured, runners run as
 * local processes, which is what a first start on a laptop wants.
 */
import { providerConfigSchema, type ProviderConfig, type RunnerflowConfig } from '../config/schema';
import { AwsEc2Provider } from './aws-ec2/provider';
import { ExternalProvider } from './external/provider';
import { FakeProvider } from './fake';
import { instrumentProvider } from './instrumented';
import { LocalProcessProvider } from './local-process/provider';
import type { ProviderPort } from './port';

export const DEFAULT_PROVIDER_NAME = 'local';

export class UnknownProviderError extends Error {
  constructor(
    readonly providerName: string,
    readonly known: string[],
  ) {
    super(`unknown provider "${providerName}"; configured providers: ${known.length > 0 ? known.map((k) => `"${k}"`).join(', ') : '(none)'}`);
    this.name = 'UnknownProviderError';
  }
}

function build(config: ProviderConfig, env: NodeJS.ProcessEnv, secretRecheckMs: number): ProviderPort {
  switch (config.type) {
    case 'local-process':
      return new LocalProcessProvider(config, env);
    case 'external':
      return new ExternalProvider(config, env);
    case 'aws-ec2':
      return new AwsEc2Provider(config, env, { secretRecheckMs });
    case 'fake':
      return new FakeProvider(config);
  }
}

/** Every configured provider, timed into the provider metrics, keyed by name. */
export function createProviders(config: RunnerflowConfig, env: NodeJS.ProcessEnv = process.env): Map<string, ProviderPort> {
  // The schema's own defaults, so the fallback matches a configured local-process provider.
  const configs: ProviderConfig[] = config.providers.length > 0 ? config.providers : [providerConfigSchema.parse({ type: 'local-process', name: DEFAULT_PROVIDER_NAME })];
  return new Map(configs.map((c) => [c.name, instrumentProvider(asConfigured(build(c, env, config.github.secretRecheck), c))]));
}

/** A provider with what its config entry says about it beyond its own settings; also for ones built elsewhere (the dev stack's simulated machines). */
export function asConfigured<P extends ProviderPort>(port: P, config: Pick<ProviderConfig, 'inlineCreateTimeout' | 'inlineDeleteTimeout'>): P {
  return Object.assign(port, { inlineCreateTimeoutMs: config.inlineCreateTimeout, inlineDeleteTimeoutMs: config.inlineDeleteTimeout });
}

export function getProvider(providers: ReadonlyMap<string, ProviderPort>, name: string): ProviderPort {
  const provider = providers.get(name);
  if (!provider) throw new UnknownProviderError(name, [...providers.keys()]);
  return provider;
}
