import type { InstanceSpec } from '../workflows/messages';

/** A plausible instance spec for tests and benchmarks: an ephemeral Linux runner of a repository. */
export function sampleInstanceSpec(overrides: Partial<InstanceSpec> = {}): InstanceSpec {
  return {
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'acme', repo: 'widgets' } },
    labels: ['self-hosted', 'linux'],
    image: 'ubuntu-24.04',
    flavor: 'small',
    osType: 'linux',
    osArch: 'amd64',
    extraSpecs: {},
    runnerGroup: 'Default',
    runnerGroupId: 1,
    ephemeral: true,
    bootstrapTimeoutMs: 30_000,
    ...overrides,
  };
}
