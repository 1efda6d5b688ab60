import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProviderNotFoundError, type ProviderCallContext } from '../../providers/port';
import { LocalProcessProvider, RECORD_FILE, LOG_FILE, type LocalProcessProviderOptions } from '../../providers/local-process/provider';
import { isRunning } from '../../providers/local-process/process-tree';
import { defaultRunnerCommand, substituteCommand } from '../../providers/local-process/runner-command';
import { bootstrapFor, TEST_INSTANCE_TOKEN, TEST_JIT_CONFIG } from './bootstrap';
import { runProviderContract } from './contract';
import { writeRunnerScripts } from './support/runner-script';
import { eventually } from './support/eventually';

const ctx: ProviderCallContext = { controllerId: 'ctl-local', poolId: 'pool-l' };


function setup() {
  const root = mkdtempSync(join(tmpdir(), 'runnerflow-local-'));
  const scripts = writeRunnerScripts(root);
  const options = (command: string[]): LocalProcessProviderOptions => ({ name: 'local', workDir: join(root, 'instances'), command, env: { RUNNER_EXTRA: 'yes' }, stopTimeout: 500 });
  return { root, scripts, options };
}

runProviderContract('local-process', () => {
  const { root, scripts, options } = setup();
  return { provider: new LocalProcessProvider(options([process.execPath, scripts.long, '--jitconfig', '{jitconfig}'])), cleanup: () => rmSync(root, { recursive: true, force: true }) };
});

describe('local process provider', () => {
  const { root, scripts, options } = setup();
  const longCommand = [process.execPath, scripts.long, '--jitconfig', '{jitconfig}', '--name', '{name}', '--dir', '{workdir}'];
  const provider = new LocalProcessProvider(options(longCommand), {
    PATH: process.env.PATH,
    LANG: 'C.UTF-8',
    HTTPS_PROXY: 'http://proxy.example:3128',
    GITHUB_APP_PRIVATE_KEY: 'host-secret-key',
    AWS_SECRET_ACCESS_KEY: 'host-secret-aws',
  });
  const dirOf = (name: string) => join(root, 'instances', name);

  afterAll(async () => {
    for (const i of await provider.listInstances({ controllerId: ctx.controllerId })) await provider.deleteInstance(i.providerId, ctx);
    rmSync(root, { recursive: true, force: true });
  });

  it('runs the command in its own working directory with placeholders and runner variables', async () => {
    await provider.createInstance(bootstrapFor('lp-args', 'pool-l'), ctx);
    const dir = dirOf('lp-args');
    expect(await eventually(() => existsSync(join(dir, 'env.json')))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'argv.json'), 'utf8'))).toEqual(['--jitconfig', TEST_JIT_CONFIG, '--name', 'lp-args', '--dir', dir]);
    const env = JSON.parse(readFileSync(join(dir, 'env.json'), 'utf8')) as Record<string, string>;
    expect(env).toMatchObject({
      RUNNERFLOW_CALLBACK_URL: 'http://127.0.0.1:9/api/v1/callbacks',
      RUNNERFLOW_INSTANCE_TOKEN: TEST_INSTANCE_TOKEN,
      RUNNERFLOW_JIT_CONFIG: TEST_JIT_CONFIG,
      ACTIONS_RUNNER_INPUT_JITCONFIG: TEST_JIT_CONFIG,
      RUNNER_EXTRA: 'yes',
      PATH: process.env.PATH,
      LANG: 'C.UTF-8',
      HTTPS_PROXY: 'http://proxy.example:3128',
    });
    // Job steps inherit the runner's environment: the worker's credentials must not be in it.
    expect(env).not.toHaveProperty('GITHUB_APP_PRIVATE_KEY');
    expect(env).not.toHaveProperty('AWS_SECRET_ACCESS_KEY');
    expect(await eventually(() => readFileSync(join(dir, LOG_FILE), 'utf8').includes('runner up'))).toBe(true);
  });

  it('keeps secrets out of its instance record', async () => {
    await provider.createInstance(bootstrapFor('lp-record', 'pool-l'), ctx);
    const record = readFileSync(join(dirOf('lp-record'), RECORD_FILE), 'utf8');
    expect(JSON.parse(record)).toMatchObject({ name: 'lp-record', poolId: 'pool-l', controllerId: 'ctl-local' });
    expect(record).not.toContain(TEST_JIT_CONFIG);
    expect(record).not.toContain(TEST_INSTANCE_TOKEN);
  });

  it('finds a running runner again from a new provider object (worker restart)', async () => {
    const created = await provider.createInstance(bootstrapFor('lp-restart', 'pool-l'), ctx);
    const pid = (JSON.parse(readFileSync(join(dirOf('lp-restart'), RECORD_FILE), 'utf8')) as { pid: number }).pid;
    const restarted = new LocalProcessProvider(options(longCommand));
    expect(await restarted.getInstance(created.providerId, ctx)).toMatchObject({ name: 'lp-restart', status: 'running' });
    expect((await restarted.listInstances(ctx)).map((i) => i.name)).toContain('lp-restart');
    expect((await restarted.createInstance(bootstrapFor('lp-restart', 'pool-l'), ctx)).providerId).toBe(created.providerId);
    expect(JSON.parse(readFileSync(join(dirOf('lp-restart'), RECORD_FILE), 'utf8'))).toMatchObject({ pid });
    await restarted.deleteInstance(created.providerId, ctx);
    expect(await eventually(() => !isRunning(pid))).toBe(true);
  });

  it('reads a runner that exited as stopped, with its exit status', async () => {
    const shortProvider = new LocalProcessProvider(options([process.execPath, scripts.short, '3']));
    await shortProvider.createInstance(bootstrapFor('lp-exit', 'pool-l'), ctx);
    expect(await eventually(() => existsSync(join(dirOf('lp-exit'), 'exit-status')))).toBe(true);
    expect(await shortProvider.getInstance('lp-exit', ctx)).toMatchObject({ status: 'stopped', providerFault: 'runner exited with status 3' });
    await shortProvider.deleteInstance('lp-exit', ctx);
  });

  it('reads a killed runner as stopped', async () => {
    await provider.createInstance(bootstrapFor('lp-killed', 'pool-l'), ctx);
    const pid = (JSON.parse(readFileSync(join(dirOf('lp-killed'), RECORD_FILE), 'utf8')) as { pid: number }).pid;
    process.kill(-pid, 'SIGKILL');
    expect(await eventually(() => !isRunning(pid))).toBe(true);
    expect((await provider.getInstance('lp-killed', ctx)).status).toBe('stopped');
  });

  it('kills the whole tree on delete, SIGKILL after stopTimeout for what ignores SIGTERM, and removes the directory', async () => {
    await provider.createInstance(bootstrapFor('lp-tree', 'pool-l'), ctx);
    const dir = dirOf('lp-tree');
    expect(await eventually(() => existsSync(join(dir, 'grandchild.ready')))).toBe(true);
    const grandchild = Number(readFileSync(join(dir, 'grandchild.pid'), 'utf8'));
    const pid = (JSON.parse(readFileSync(join(dir, RECORD_FILE), 'utf8')) as { pid: number }).pid;
    expect(isRunning(grandchild)).toBe(true);
    const started = Date.now();
    await provider.deleteInstance('lp-tree', ctx);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(isRunning(pid)).toBe(false);
    expect(await eventually(() => !isRunning(grandchild))).toBe(true);
    expect(existsSync(dir)).toBe(false);
    await expect(provider.getInstance('lp-tree', ctx)).rejects.toBeInstanceOf(ProviderNotFoundError);
  });

  it('stops what a runner left running in the background after it exited', async () => {
    const leaving = new LocalProcessProvider(options(['/bin/sh', '-c', 'sleep 300 & echo $! > background.pid']));
    await leaving.createInstance(bootstrapFor('lp-background', 'pool-l'), ctx);
    const dir = dirOf('lp-background');
    expect(await eventually(() => existsSync(join(dir, 'exit-status')))).toBe(true);
    const pid = (JSON.parse(readFileSync(join(dir, RECORD_FILE), 'utf8')) as { pid: number }).pid;
    const background = Number(readFileSync(join(dir, 'background.pid'), 'utf8'));
    expect(await eventually(() => !isRunning(pid))).toBe(true);
    expect(isRunning(background)).toBe(true);
    try {
      await leaving.deleteInstance('lp-background', ctx);
      expect(await eventually(() => !isRunning(background))).toBe(true);
      expect(existsSync(dir)).toBe(false);
    } finally {
      if (isRunning(background)) process.kill(background, 'SIGKILL');
    }
  });

  it('refuses to create when aborted before starting', async () => {
    const abort = new AbortController();
    abort.abort(new Error('cancelled'));
    await expect(provider.createInstance(bootstrapFor('lp-aborted', 'pool-l'), { ...ctx, signal: abort.signal })).rejects.toThrow('cancelled');
    expect(existsSync(dirOf('lp-aborted'))).toBe(false);
  });
});

describe('runner command', () => {
  it('drops a flag whose placeholder is empty and substitutes the rest', () => {
    const boot = bootstrapFor('cmd', 'p', { callbackUrl: '' });
    expect(substituteCommand(['run.sh', '--jitconfig', '{jitconfig}', '--callback-url', '{callbackurl}', '--name={name}'], { bootstrap: boot, workdir: '/w' })).toEqual([
      'run.sh',
      '--jitconfig',
      TEST_JIT_CONFIG,
      '--name=cmd',
    ]);
  });

  it("defaults to the simulator's runner agent, loaded through tsx, when it is installed", () => {
    expect(defaultRunnerCommand('/nonexistent/runner-agent.ts')).toBeUndefined();
    const command = defaultRunnerCommand(import.meta.filename);
    expect(command).toEqual([process.execPath, '--import', expect.stringMatching(/^file:.*tsx/), import.meta.filename]);
    // Secrets travel in the environment, not on the command line where `ps` shows them.
    expect(command?.join(' ')).not.toMatch(/jitconfig|instancetoken/);
  });
});
