import { afterAll, beforeAll, inject } from 'vitest';
import { apiRequest as api, startDevStack, SIMULATED_PROVIDER, type DevStack } from '../../devstack/stack';
import type { GitHubSimulatorOptions } from '../../github/simulator/server';
import type { PoolSettingsInput } from '../../domain/pool';
import { FakeProviderControl } from '../../providers/fake';
import { uniqueName } from '../support/temporal';

/** Lifecycle durations for end-to-end runs: production rules, test speed. */
export const E2E_TIMINGS = {
  createInitialInterval: 200,
  createMaxInterval: 1_000,
  deleteInitialInterval: 1_000,
  deleteMaxInterval: 2_000,
  githubInitialInterval: 200,
  githubMaxInterval: 2_000,
  forceDeleteAttemptTimeout: 500,
  busyRetryInterval: 500,
  heartbeatTimeout: 2_000,
  poolCreateBackoffInitial: 1_000,
  poolCreateBackoffMax: 4_000,
};

export interface E2EStackOptions {
  /** Config merged over the e2e defaults (sweep and liveness off: their schedules are per provider name). */
  config?: Record<string, unknown>;
  simulatedProvider?: string;
  /** GitHub App credentials under this name instead of a token named `default`. */
  githubAppCredentials?: string;
  /** Token credentials under this name instead of `default`. */
  githubTokenCredentials?: string;
  /** The credentials' secret read from this file instead of the environment. */
  githubSecretFile?: string;
}

export async function startE2EStack(simulator: Pick<GitHubSimulatorOptions, 'jobDurationMs' | 'longPollMs'> = {}, options: E2EStackOptions = {}): Promise<DevStack & { machines: FakeProviderControl }> {
  const stack = await startDevStack({
    temporalAddress: inject('temporalAddress'),
    taskQueue: uniqueName('tq-e2e'),
    machines: 'simulated',
    ...(options.simulatedProvider ? { simulatedProvider: options.simulatedProvider } : {}),
    ...(options.githubAppCredentials ? { githubAppCredentials: options.githubAppCredentials } : {}),
    ...(options.githubTokenCredentials ? { githubTokenCredentials: options.githubTokenCredentials } : {}),
    ...(options.githubSecretFile ? { githubSecretFile: options.githubSecretFile } : {}),
    workflowBundlePath: inject('workflowBundlePath'),
    config: { timings: E2E_TIMINGS, controllerId: uniqueName('ctl'), sweep: { enabled: false }, liveness: { enabled: false }, ...options.config },
    simulator: { onError: () => undefined, webhookConcurrency: 8, ...simulator },
  });
  return Object.assign(stack, { machines: new FakeProviderControl(stack.machinesDir!) });
}

export { api };

export function e2ePool(repo: string, overrides: Partial<PoolSettingsInput> = {}): PoolSettingsInput {
  return {
    name: uniqueName('p').toLowerCase().slice(0, 40),
    github: { credentials: 'default', scope: { kind: 'repo', owner: 'acme', repo } },
    labels: ['self-hosted', 'linux', repo],
    provider: SIMULATED_PROVIDER,
    minIdleRunners: 0,
    maxRunners: 3,
    bootstrapTimeout: 20_000,
    idleTimeout: 60_000,
    ...overrides,
  };
}

export type E2EStack = Awaited<ReturnType<typeof startE2EStack>>;

/** One stack for the whole file, stopped after its last test. */
export function useE2EStack(simulator: Pick<GitHubSimulatorOptions, 'jobDurationMs' | 'longPollMs'> = {}, options: E2EStackOptions = {}): E2EStack {
  const stack = {} as E2EStack;
  beforeAll(async () => {
    Object.assign(stack, await startE2EStack(simulator, options));
  });
  afterAll(async () => {
    await stack.stop?.();
  });
  return stack;
}
