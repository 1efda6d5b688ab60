import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { runnerStatusSignal } from '../../workflows/messages';
import { instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { startInstance, waitForStatus } from './helpers';

const run = promisify(execFile);
const SCRIPTS = resolve(import.meta.dirname, '../../scripts');
const env = useTestWorker();

function scriptEnv() {
  return { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_CLI: inject('temporalCli') };
}

describe('operators with the temporal CLI', () => {
  it('temporal workflow signal --name forceDelete ends the workflow', async () => {
    const name = uniqueName('cli-force');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await run(inject('temporalCli'), [
      'workflow', 'signal', '--address', inject('temporalAddress'), '--namespace', 'default',
      '--workflow-id', `runner/${name}`, '--name', 'forceDelete', '--input', '{"reason":"from the cli"}',
    ]);
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: true, leaked: false });
    expect(final.transitions.find((t) => t.to === 'pending_force_delete')?.reason).toBe('from the cli');
  });

  it('scripts: state, list-by-status, force-delete', async () => {
    const name = uniqueName('script');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await handle.signal(runnerStatusSignal, { status: 'idle' });

    const state = await run('bash', [`${SCRIPTS}/state.sh`, name], { env: scriptEnv() });
    expect(JSON.parse(state.stdout)).toMatchObject({ queryResult: [{ name, status: 'running' }] });

    let listed = '';
    for (let i = 0; i < 50 && !listed.includes(name); i++) {
      listed = (await run('bash', [`${SCRIPTS}/list-by-status.sh`, 'running', 'test-pool'], { env: scriptEnv() })).stdout;
      if (!listed.includes(name)) await new Promise((r) => setTimeout(r, 200));
    }
    expect(listed).toContain(`runner/${name}`);

    await run('bash', [`${SCRIPTS}/force-delete.sh`, name, 'machine is "stuck"'], { env: scriptEnv() });
    const final = await handle.result();
    expect(final.forced).toBe(true);
    expect(final.transitions.find((t) => t.to === 'pending_force_delete')?.reason).toBe('machine is "stuck"');
  });

  it('scripts: delete is graceful, and bad input is refused with a clear message', async () => {
    const name = uniqueName('script-delete');
    const handle = await startInstance(env.client, env.w.taskQueue, instanceInput(name));
    await waitForStatus(handle, 'running');
    await run('bash', [`${SCRIPTS}/delete.sh`, name], { env: scriptEnv() });
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'deleted', forced: false });
    expect(env.w.github.calls.some((c) => c.op === 'remove' && c.name === name)).toBe(true);

    await expect(run('bash', [`${SCRIPTS}/list-by-status.sh`, 'sleeping'], { env: scriptEnv() })).rejects.toMatchObject({
      stderr: expect.stringContaining("unknown status 'sleeping'"),
    });
    await expect(run('bash', [`${SCRIPTS}/force-delete.sh`], { env: scriptEnv() })).rejects.toMatchObject({
      stderr: expect.stringContaining('usage: force-delete.sh NAME'),
    });
  });

  it('scripts: sweep names a provider without a sweep schedule, and asks for the provider', async () => {
    const provider = uniqueName('no-such-provider');
    await expect(run('bash', [`${SCRIPTS}/sweep.sh`, provider], { env: scriptEnv() })).rejects.toMatchObject({
      stderr: `no sweep schedule 'sweep/${provider}': is '${provider}' a provider in the config, and has a worker started with it?\n`,
    });
    await expect(run('bash', [`${SCRIPTS}/sweep.sh`], { env: scriptEnv() })).rejects.toMatchObject({
      stderr: expect.stringContaining('usage: sweep.sh PROVIDER'),
    });
  });
});
