import type { BootstrapInstance } from '../../providers/port';

export const TEST_INSTANCE_TOKEN = 'instance-token-SECRET-7f3a';
export const TEST_JIT_CONFIG = 'jit-config-SECRET-91bc';

/** A complete bootstrap for tests; the secrets are recognisable so tests can look for leaks. */
export function bootstrapFor(name: string, poolId: string, overrides: Partial<BootstrapInstance> = {}): BootstrapInstance {
  return {
    name,
    poolId,
    tools: [{ os: 'linux', architecture: 'x64', download_url: 'https://example.invalid/runner.tar.gz', filename: 'runner.tar.gz', sha256_checksum: 'abc' }],
    repoUrl: 'https://github.com/acme/widgets',
    callbackUrl: 'http://127.0.0.1:9/api/v1/callbacks',
    metadataUrl: 'http://127.0.0.1:9/api/v1/metadata',
    instanceToken: TEST_INSTANCE_TOKEN,
    sshKeys: ['ssh-ed25519 AAAA test'],
    extraSpecs: { disk: 20 },
    githubRunnerGroup: 'default',
    caCertBundle: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    arch: 'amd64',
    osType: 'linux',
    flavor: 't3.micro',
    image: 'ami-12345678',
    labels: ['self-hosted', 'linux'],
    jitConfigEnabled: true,
    jitConfig: TEST_JIT_CONFIG,
    userDataOptions: { disableUpdatesOnBoot: true, extraPackages: ['jq'] },
    ...overrides,
  };
}
