/**
 * GitHub gives a JIT config out once. When an attempt's provider call made the machine but
 * the attempt still failed (the answer was lost, the attempt was cut off), the next attempt
 * finds the machine and must keep the JIT config the first one minted: images that fetch it
 * from the metadata service would otherwise never register.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeProvider } from '../../providers/fake';
import { deleteSignal, sealedCredentialQuery, stateQuery } from '../../workflows/messages';
import { instanceInput, uniqueName, useTestWorker, type TemporalTestEnv } from '../support/temporal';
import { startInstance, waitForStatus } from './helpers';

// A stand-in seal, so the test can read what was kept; the real one is tested in test/api/sealed-secret.test.ts.
const sealSecret = (plain: string) => `sealed(${plain})`;
const unsealSecret = (sealed: string) => /^sealed\((.*)\)$/.exec(sealed)![1]!;
// Without an inline bound the first attempt is an ordinary activity, retried by Temporal: the
// credential reaches the next attempt in the heartbeat details the server keeps.
const activityFirst = useTestWorker({ activities: { sealSecret, unsealSecret } });
// With one, the first attempt is a local activity: it reaches the next in the failure's details.
const inlineDir = mkdtempSync(join(tmpdir(), 'runnerflow-credential-'));
const inlineFirst = useTestWorker({
  fakeDir: inlineDir,
  providers: new Map([['fake', Object.assign(new FakeProvider({ name: 'fake', stateDir: inlineDir }), { inlineCreateTimeoutMs: 2_000 })]]),
  activities: { sealSecret, unsealSecret },
});
const bothWays: [string, TemporalTestEnv][] = [
  ['an activity retried by Temporal', activityFirst],
  ['the inline attempt, then an activity', inlineFirst],
];

describe.each(bothWays)('a create whose provider made the machine but failed to say so (%s)', (_, env) => {
  it('keeps the JIT config and runner id the failed attempt minted, and makes one machine', async () => {
    const name = uniqueName('lost-answer');
    env.w.fake.setFault('create', { failTimes: 1, afterWork: true, instance: name, message: 'connection reset after the machine was made' });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    const state = await waitForStatus(handle, 'running');
    expect(state.transitions.at(-1)?.reason).toMatch(/earlier attempt/);
    expect(env.w.fake.instances().filter((m) => m.name === name)).toHaveLength(1);

    const minted = env.w.github.calls.filter((c) => c.op === 'credential' && c.name === name);
    expect(minted).toHaveLength(1);
    const jit = Buffer.from(`jit-secret-for-${name}`).toString('base64');
    expect(await handle.query(sealedCredentialQuery)).toBe(`sealed(${jit})`);
    expect((await handle.query(stateQuery)).githubRunnerId).toBe(env.w.github.runners.get(name)?.id);

    await handle.signal(deleteSignal, {});
    expect((await handle.result()).status).toBe('deleted');
  });
});

describe.each(bothWays)('a create whose provider failed before making the machine (%s)', (_, env) => {
  it('hands the retry the registration the failed attempt minted, unused at GitHub, instead of minting again', async () => {
    const name = uniqueName('failed-create');
    env.w.fake.setFault('create', { failTimes: 1, instance: name, message: 'capacity exhausted' });
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    const state = await waitForStatus(handle, 'running');
    expect(env.w.fake.instances().filter((m) => m.name === name)).toHaveLength(1);
    expect(env.w.github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(1);
    expect(state.githubRunnerId).toBe(env.w.github.runners.get(name)?.id);
    const jit = Buffer.from(`jit-secret-for-${name}`).toString('base64');
    expect(await handle.query(sealedCredentialQuery)).toBe(`sealed(${jit})`);

    await handle.signal(deleteSignal, {});
    expect((await handle.result()).status).toBe('deleted');
  });

  it('mints again when an agent holds the earlier registration: it is not handed out twice', async () => {
    const name = uniqueName('failed-create-online');
    env.w.fake.setFault('create', { failTimes: 1, instance: name, message: 'capacity exhausted' });
    const seen = setInterval(() => {
      const runner = env.w.github.runners.get(name);
      // An agent somewhere came up with the first registration (a machine the provider did not report).
      if (runner && runner.status === 'offline' && env.w.github.calls.filter((c) => c.op === 'credential' && c.name === name).length === 1) runner.status = 'online';
    }, 5);
    try {
      const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
      const state = await waitForStatus(handle, 'running');
      expect(env.w.github.calls.filter((c) => c.op === 'credential' && c.name === name)).toHaveLength(2);
      expect(state.githubRunnerId).toBe(env.w.github.runners.get(name)?.id);
      await handle.signal(deleteSignal, {});
      expect((await handle.result()).status).toBe('deleted');
    } finally {
      clearInterval(seen);
    }
  });
});
