/**
 * A worker with extra activities (sweep, liveness) next to the instance ones,
 * one GitHub double, and a fake provider per test: the providers map is read on
 * every activity call, so tests add providers while the worker runs and never
 * see each other's machines or runners.
 */
import type { Client, Connection } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { GitHubDouble } from './github-double';
import { connectClient, startTestWorker, uniqueName, type TestWorker } from './temporal';

export interface ProviderRig {
  client: Client;
  worker: TestWorker;
  providers: Map<string, ProviderPort>;
  /** GitHub as the instances and the extra activities see it. */
  github: GitHubDouble;
}

export type ExtraActivities = Record<string, (...args: never[]) => Promise<unknown>>;

/** One rig for the whole test file, filled in by beforeAll; `extend` adds fields of its own before the worker starts. */
export function useProviderRig<R extends ProviderRig>(extra: (rig: R) => ExtraActivities, extend: Omit<R, keyof ProviderRig>): R {
  const rig = { providers: new Map<string, ProviderPort>(), github: new GitHubDouble(), ...extend } as R;
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ client: rig.client, connection } = await connectClient());
    rig.worker = await startTestWorker({ providers: rig.providers, github: rig.github, extraActivities: extra(rig) });
  });
  afterAll(async () => {
    await rig.worker?.stop();
    await connection?.close();
  });
  return rig;
}

export interface TestProvider {
  name: string;
  stateDir: string;
  fake: FakeProviderControl;
}

/** A fake provider (or a subclass) under a name no other test uses. */
export function addProvider(rig: ProviderRig, prefix: string, Provider: typeof FakeProvider = FakeProvider): TestProvider {
  const name = uniqueName(prefix);
  const stateDir = mkdtempSync(join(tmpdir(), `runnerflow-${prefix}-`));
  rig.providers.set(name, new Provider({ name, stateDir }));
  return { name, stateDir, fake: new FakeProviderControl(stateDir) };
}
