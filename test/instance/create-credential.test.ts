/**
 * GitHub gives a JIT config out once. When an attempt's provider call made the machine but
 * the attempt still failed (the answer was lost, the attempt was cut off), the next attempt
 * finds the machine and must keep the JIT config the first one minted: images that fetch it
 * from the metadata service would otherwise never register.
 */
import { describe, expect, it } from 'vitest';
import { deleteSignal, sealedCredentialQuery, stateQuery } from '../../workflows/messages';
import { instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { startInstance, waitForStatus } from './helpers';

// A stand-in seal, so the test can read what was kept; the real one is tested in test/api/sealed-secret.test.ts.
const env = useTestWorker({ activities: { sealSecret: (plain: string) => `sealed(${plain})` } });

describe('a create whose provider made the machine but failed to say so', () => {
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
