/**
 * A create attempt cut off at its inline bound may still make its machine (a cloud that took
 * the request carries on), and the attempt after it is an ordinary activity that another
 * worker may take, which cannot wait for the first. Minting the runner's registration again
 * there would make GitHub drop the one the first machine's agent holds. Here one worker runs
 * the runner's workflow tasks and inline attempts and takes no activity task, and another
 * takes only activity tasks, so the attempt after the cut-off always runs on the other worker.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seal, unseal } from '../../api/sealed-secret';
import { FakeProvider } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { forceDeleteSignal, sealedCredentialQuery } from '../../workflows/messages';
import { GitHubDouble } from '../support/github-double';
import { connectClient, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { scheduledActivities, startInstance, waitForStatus, withFault } from './helpers';
import { createRunnerflowWorker, type RunnerflowWorkerOptions } from '../../worker/create-worker';
import type { Client, Connection } from '@temporalio/client';

const INLINE_BOUND_MS = 600;
const KEY = 'instance-token-key-for-the-test';
const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-across-'));
const github = new GitHubDouble();
const sealing = { sealSecret: (plain: string) => seal(plain, KEY), unsealSecret: (sealed: string) => unseal(sealed, KEY) };
const fakeProvider = (): Map<string, ProviderPort> =>
  new Map([['fake', Object.assign(new FakeProvider({ name: 'fake', stateDir: fakeDir }), { inlineCreateTimeoutMs: INLINE_BOUND_MS })]]);

let client: Client;
let connection: Connection;
let workflows: TestWorker;
let activities: TestWorker;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
  workflows = await startTestWorker({ fakeDir, github, providers: fakeProvider(), activities: sealing, roles: { activities: false } });
  activities = await startTestWorker({ taskQueue: workflows.taskQueue, fakeDir, github, providers: fakeProvider(), activities: sealing, roles: { workflows: false } });
});

afterAll(async () => {
  await Promise.all([workflows?.stop(), activities?.stop()]);
  await connection?.close();
});

describe('a create attempt cut off on one worker and retried on another', () => {
  it('hands the provider the registration the cut-off attempt minted: one registration, held by the one machine', async () => {
    const name = uniqueName('across-lands-late');
    await withFault(workflows.fake, 'create', name, { delayMs: INLINE_BOUND_MS * 2, landsAfterAbort: true }, async () => {
      const handle = await startInstance(client, workflows.taskQueue, instanceInput(name));
      const state = await waitForStatus(handle, 'running');
      expect(await scheduledActivities(handle)).toEqual(['createInstance']);

      // The cut-off call made the machine after its caller gave up ('aborted', as the fake records it);
      // the activity's call, with the same registration, found that machine.
      const creates = workflows.fake.calls('create').filter((c) => c.instance === name);
      expect(creates.map((c) => c.outcome)).toEqual(['aborted', 'existing']);
      expect(workflows.fake.instances().filter((m) => m.name === name)).toHaveLength(1);
      // Minted once: a second mint would have replaced the registration the machine holds.
      expect(github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(1);
      expect(state.githubRunnerId).toBe(github.runners.get(name)?.id);
      // The metadata service still has the JIT config to give the machine.
      const jit = Buffer.from(`jit-secret-for-${name}`).toString('base64');
      expect(unseal((await handle.query(sealedCredentialQuery))!, KEY)).toBe(jit);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    });
  });

  it('mints again when GitHub no longer has the earlier registration', async () => {
    const name = uniqueName('across-gone');
    // The cut-off attempt's call stops at its bound, so no machine comes of it.
    await withFault(workflows.fake, 'create', name, { delayMs: INLINE_BOUND_MS * 2 }, async () => {
      const first = new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (github.runners.has(name)) {
            clearInterval(check);
            // Someone removed the registration meanwhile (an operator, GitHub's clean-up of offline runners).
            github.runners.delete(name);
            resolve();
          }
        }, 10);
      });
      const handle = await startInstance(client, workflows.taskQueue, instanceInput(name));
      await first;
      const state = await waitForStatus(handle, 'running');
      expect(github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(2);
      expect(state.githubRunnerId).toBe(github.runners.get(name)?.id);
      expect(workflows.fake.instances().filter((m) => m.name === name)).toHaveLength(1);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    });
  });

  it('is not set up with a worker that would take neither kind of task', async () => {
    const idle = { ...({} as RunnerflowWorkerOptions), roles: { workflows: false, activities: false } };
    await expect(createRunnerflowWorker(idle)).rejects.toThrow('roles: a worker must take workflow tasks, activity tasks or both');
  });
});
