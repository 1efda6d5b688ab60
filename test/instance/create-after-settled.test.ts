/**
 * An inline create attempt cut off at its bound while its registration is still on its way
 * settles later, once the registration comes. The ordinary activity after it usually starts
 * only then, once the server has dispatched it, and finds nothing running: the worker keeps
 * such an attempt for the one after it. Here the activity cannot start before that: the only
 * worker that takes activity tasks starts once the cut-off attempt has settled. Both workers
 * share one set of create activities, as the threads of one worker process do.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstanceActivities } from '../../activities/instance-activities';
import { FakeProvider } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { forceDeleteSignal } from '../../workflows/messages';
import { GitHubDouble } from '../support/github-double';
import { testInstanceDeps } from '../support/instance-deps';
import { connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { scheduledActivities, startInstance, waitForStatus } from './helpers';
import type { Client, Connection } from '@temporalio/client';

const INLINE_BOUND_MS = 600;
const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-settled-'));
const github = new GitHubDouble();
const providers = new Map<string, ProviderPort>([['fake', Object.assign(new FakeProvider({ name: 'fake', stateDir: fakeDir }), { inlineCreateTimeoutMs: INLINE_BOUND_MS })]]);
const shared = createInstanceActivities(testInstanceDeps(providers, { get: () => github }));
const createSteps = { createInstance: shared.createInstance, createInstanceInline: shared.createInstanceInline };

let client: Client;
let connection: Connection;
let workflows: TestWorker;
let activities: TestWorker | undefined;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
  workflows = await startTestWorker({ fakeDir, github, providers, extraActivities: createSteps, roles: { activities: false } });
});

afterAll(async () => {
  await Promise.all([workflows?.stop(), activities?.stop()]);
  await connection?.close();
});

describe('the create attempt after a cut-off one that has settled', () => {
  it('hands the provider the registration the cut-off attempt minted: the runner is registered once', async () => {
    const name = uniqueName('after-settled');
    github.setFault('credential', { delayMs: INLINE_BOUND_MS + 100, delayTimes: 1 });
    try {
      const handle = await startInstance(client, workflows.taskQueue, instanceInput(name));
      // The registration came after the bound; the attempt then settles within milliseconds.
      await eventually(() => github.calls.some((c) => c.op === 'credential' && c.name === name), 10_000, 'the cut-off attempt registered the runner');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await scheduledActivities(handle)).toEqual(['createInstance']);
      expect(workflows.fake.calls('create').filter((c) => c.instance === name)).toEqual([]);

      activities = await startTestWorker({ taskQueue: workflows.taskQueue, fakeDir, github, providers, extraActivities: createSteps, roles: { workflows: false } });
      const state = await waitForStatus(handle, 'running');
      expect(github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(1);
      expect(state.githubRunnerId).toBe(github.runners.get(name)?.id);
      expect(workflows.fake.calls('create').filter((c) => c.instance === name).map((c) => c.outcome)).toEqual(['created']);

      await handle.signal(forceDeleteSignal, {});
      expect(await handle.result()).toMatchObject({ status: 'deleted' });
    } finally {
      github.setFault('credential', {});
    }
  });
});
