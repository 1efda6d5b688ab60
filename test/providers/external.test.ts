import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { providerConfigSchema } from '../../config/schema';
import { ExternalProvider } from '../../providers/external/provider';
import { RUNNERFLOW_STDIN_KEY } from '../../providers/external/protocol';
import { ProviderDuplicateError, ProviderFaultError, ProviderNotFoundError, type ProviderCallContext } from '../../providers/port';
import { bootstrapFor, TEST_INSTANCE_TOKEN, TEST_JIT_CONFIG } from './bootstrap';
import { writeExternalScript, type ExternalScriptFixture } from './support/external-script';
import { eventually } from './support/eventually';
import { isRunning } from '../../providers/local-process/process-tree';

const HOST_ENV = {
  PATH: '/usr/bin:/bin',
  HOME: '/root',
  RUNNERFLOW_TEST_TOKEN: 'should-not-pass',
  OS_AUTH_URL: 'http://127.0.0.1:5000',
  OS_REGION: 'one',
  GARM_SNEAKY: 'must-never-pass',
  HTTP_PROXY: 'http://127.0.0.1:3128',
  https_proxy: 'http://127.0.0.1:3129',
  NO_PROXY: 'localhost',
};



describe.each(['v0.1.0', 'v0.1.1'] as const)('external provider %s', (interfaceVersion) => {
  let script: ExternalScriptFixture;
  let provider: ExternalProvider;
  const ctx: ProviderCallContext = { controllerId: 'ctl-ext', poolId: 'pool-7', extraSpecs: { disk: 40, zone: 'b' } };
  const v011 = interfaceVersion === 'v0.1.1';

  beforeEach(() => {
    script = writeExternalScript();
    provider = new ExternalProvider(
      { name: 'ext', executable: script.executable, configFile: script.configFile, interfaceVersion, environmentPrefixes: ['OS_'], timeout: 10_000 },
      HOST_ENV,
    );
  });
  afterEach(() => script.remove());

  it('replaces the environment: GARM variables, allowed prefixes and proxies only', async () => {
    await provider.createInstance(bootstrapFor('env-1', 'pool-7'), ctx);
    const env = script.calls('CreateInstance')[0]!.env;
    expect(env).toMatchObject({
      GARM_COMMAND: 'CreateInstance',
      GARM_CONTROLLER_ID: 'ctl-ext',
      GARM_PROVIDER_CONFIG_FILE: script.configFile,
      GARM_INTERFACE_VERSION: interfaceVersion,
      GARM_POOL_ID: 'pool-7',
      OS_AUTH_URL: 'http://127.0.0.1:5000',
      OS_REGION: 'one',
      HTTP_PROXY: 'http://127.0.0.1:3128',
      https_proxy: 'http://127.0.0.1:3129',
      NO_PROXY: 'localhost',
    });
    for (const absent of ['PATH', 'HOME', 'RUNNERFLOW_TEST_TOKEN', 'GARM_SNEAKY', 'GARM_INSTANCE_ID']) expect(env).not.toHaveProperty(absent);
  });

  it('sets GARM_POOL_ID, GARM_INSTANCE_ID and GARM_POOL_EXTRASPECS per command as the interface version says', async () => {
    const created = await provider.createInstance(bootstrapFor('env-2', 'pool-7'), ctx);
    await provider.getInstance(created.providerId, ctx);
    await provider.listInstances(ctx);
    await provider.stopInstance(created.providerId, ctx);
    await provider.startInstance(created.providerId, ctx);
    await provider.deleteInstance(created.providerId, ctx);
    await provider.removeAllInstances(ctx);
    await provider.getVersion(ctx);
    const byCommand = Object.fromEntries(script.calls().map((c) => [c.command, c.env]));
    for (const command of ['GetInstance', 'StopInstance', 'StartInstance', 'DeleteInstance']) {
      expect(byCommand[command]?.GARM_INSTANCE_ID, command).toBe('ext-env-2');
    }
    for (const command of ['ListInstances', 'RemoveAllInstances', 'GetVersion']) expect(byCommand[command], command).not.toHaveProperty('GARM_INSTANCE_ID');
    expect(byCommand.ListInstances?.GARM_POOL_ID).toBe('pool-7');
    for (const command of ['GetInstance', 'DeleteInstance', 'RemoveAllInstances', 'GetVersion']) {
      if (v011) expect(byCommand[command]?.GARM_POOL_ID, command).toBe('pool-7');
      else expect(byCommand[command], command).not.toHaveProperty('GARM_POOL_ID');
    }
    for (const env of Object.values(byCommand)) {
      if (v011) expect(JSON.parse(Buffer.from(env.GARM_POOL_EXTRASPECS!, 'base64').toString())).toEqual({ disk: 40, zone: 'b' });
      else expect(env).not.toHaveProperty('GARM_POOL_EXTRASPECS');
    }
  });

  it("sends GARM's bootstrap JSON on stdin, with the runner credential under the runnerflow key", async () => {
    await provider.createInstance(bootstrapFor('stdin-1', 'pool-7'), ctx);
    const stdin = JSON.parse(script.calls('CreateInstance')[0]!.stdin) as Record<string, unknown>;
    expect(Object.keys(stdin).sort()).toEqual(
      [
        'name', 'tools', 'repo_url', 'callback-url', 'metadata-url', 'instance-token', 'ssh-keys', 'extra_specs', 'github-runner-group',
        'ca-cert-bundle', 'arch', 'os_type', 'flavor', 'image', 'labels', 'pool_id', 'user_data_options', 'jit_config_enabled', 'proxy_config',
        RUNNERFLOW_STDIN_KEY,
      ].sort(),
    );
    expect(stdin).toMatchObject({
      name: 'stdin-1',
      'instance-token': TEST_INSTANCE_TOKEN,
      pool_id: 'pool-7',
      jit_config_enabled: true,
      user_data_options: { disable_updates_on_boot: true, extra_packages: ['jq'], enable_boot_debug: false },
      proxy_config: { http_proxy: 'http://127.0.0.1:3128', https_proxy: 'http://127.0.0.1:3129', no_proxy: 'localhost' },
      [RUNNERFLOW_STDIN_KEY]: { jit_config: TEST_JIT_CONFIG },
    });
    expect(Buffer.from(stdin['ca-cert-bundle'] as string, 'base64').toString()).toContain('BEGIN CERTIFICATE');
  });

  it('leaves a registration token out of stdin when the machine can fetch it from the metadata service', async () => {
    await provider.createInstance(bootstrapFor('stdin-2', 'pool-7', { jitConfig: undefined, registrationToken: 'REG-TOKEN-2' }), ctx);
    const withService = JSON.parse(script.calls('CreateInstance').at(-1)!.stdin) as Record<string, unknown>;
    expect(withService['metadata-url']).toBeTruthy();
    expect(withService).not.toHaveProperty(RUNNERFLOW_STDIN_KEY);
    expect(JSON.stringify(withService)).not.toContain('REG-TOKEN-2');

    await provider.createInstance(bootstrapFor('stdin-3', 'pool-7', { jitConfig: undefined, registrationToken: 'REG-TOKEN-3', metadataUrl: '' }), ctx);
    const withoutService = JSON.parse(script.calls('CreateInstance').at(-1)!.stdin) as Record<string, unknown>;
    expect(withoutService[RUNNERFLOW_STDIN_KEY]).toEqual({ registration_token: 'REG-TOKEN-3' });
  });

  it('treats exit 30 on delete as success and on get as ProviderNotFoundError', async () => {
    await provider.deleteInstance('nothing-here', ctx);
    const err = await provider.getInstance('nothing-here', ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderNotFoundError);
    expect((err as ProviderNotFoundError).providerMessage).toContain('nothing-here not found');
  });

  it('turns exit 31 on create into the existing machine, or ProviderDuplicateError when get cannot find it', async () => {
    const first = await provider.createInstance(bootstrapFor('dup-1', 'pool-7'), ctx);
    const again = await provider.createInstance(bootstrapFor('dup-1', 'pool-7'), ctx);
    expect(again.providerId).toBe(first.providerId);
    expect(script.calls('CreateInstance')).toHaveLength(2);

    script.setBehaviour('CreateInstance', { exit: 31, stderr: 'duplicate name' });
    const err = await provider.createInstance(bootstrapFor('dup-2', 'pool-7'), ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderDuplicateError);
    expect((err as ProviderDuplicateError).providerMessage).toBe('duplicate name');
  });

  it('turns any other exit code into ProviderFaultError carrying stderr, truncated and without secrets', async () => {
    script.setBehaviour('CreateInstance', { exit: 2, stderr: `quota exceeded for token ${TEST_INSTANCE_TOKEN} and ${TEST_JIT_CONFIG}\n${'x'.repeat(5000)}` });
    const err = (await provider.createInstance(bootstrapFor('fault-1', 'pool-7'), ctx).catch((e: unknown) => e)) as ProviderFaultError;
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect(err.message).toContain('exit code 2');
    expect(err.providerMessage!.length).toBeLessThanOrEqual(2001);
    script.setBehaviour('CreateInstance', { exit: 1, stderr: `cannot use ${TEST_INSTANCE_TOKEN} / ${TEST_JIT_CONFIG}` });
    const short = (await provider.createInstance(bootstrapFor('fault-2', 'pool-7'), ctx).catch((e: unknown) => e)) as ProviderFaultError;
    expect(short.providerMessage).toBe('cannot use [redacted] / [redacted]');
    for (const e of [err, short]) {
      expect(`${e.message} ${e.providerMessage} ${e.stack}`).not.toContain(TEST_INSTANCE_TOKEN);
      expect(`${e.message} ${e.providerMessage} ${e.stack}`).not.toContain(TEST_JIT_CONFIG);
    }
  });

  it.each([
    ['not JSON', 'this is not json', /not valid JSON/],
    ['missing provider_id', JSON.stringify({ name: 'x', status: 'running' }), /missing provider_id/],
    ['missing name', JSON.stringify({ provider_id: 'i-1', status: 'running' }), /missing name/],
    ['a status GARM keeps for itself', JSON.stringify({ provider_id: 'i-1', name: 'x', status: 'pending_create' }), /invalid status "pending_create"/],
  ])('rejects get output that is %s with a clear ProviderFaultError', async (_what, stdout, message) => {
    script.setBehaviour('GetInstance', { exit: 0, stdout });
    const err = await provider.getInstance('x', ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toContain('GetInstance returned unusable output');
  });

  it('rejects a list that is not an array or holds an invalid instance', async () => {
    script.setBehaviour('ListInstances', { stdout: JSON.stringify({ provider_id: 'i-1' }) });
    await expect(provider.listInstances(ctx)).rejects.toThrow(/expected a JSON array/);
    script.setBehaviour('ListInstances', { stdout: JSON.stringify([{ provider_id: 'i-1', name: 'a', status: 'running' }, { provider_id: 'i-2', name: 'b', status: 'bogus' }]) });
    await expect(provider.listInstances(ctx)).rejects.toThrow(/invalid status "bogus"/);
  });

  it('decodes provider_fault and addresses from GARM instance JSON', async () => {
    const fault = Buffer.from('disk full').toString('base64');
    script.setBehaviour('GetInstance', { stdout: JSON.stringify({ provider_id: 'i-9', name: 'n9', status: 'error', provider_fault: fault, addresses: [{ address: '10.0.0.9', type: 'public' }], os_type: 'linux' }) });
    expect(await provider.getInstance('i-9', ctx)).toMatchObject({ providerId: 'i-9', status: 'error', providerFault: 'disk full', addresses: [{ address: '10.0.0.9', type: 'public' }], osType: 'linux' });
  });

  it('kills a hung executable and its children when the timeout passes', async () => {
    script.setBehaviour('GetInstance', { hang: true });
    const started = Date.now();
    // Long enough for the executable to start its child first, even on a machine busy with
    // the rest of the suite (a Node process can take most of a second to start there).
    const err = await provider.getInstance('x', { ...ctx, timeoutMs: 3_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect((err as Error).message).toMatch(/timed out after 3000 ms/);
    expect(Date.now() - started).toBeLessThan(6_000);
    const childPid = Number(readFileSync(join(script.dir, 'state', 'hung-child.pid'), 'utf8'));
    expect(await eventually(() => !isRunning(childPid))).toBe(true);
  });

  it('bounds create by ctx.timeoutMs even when the configured timeout is longer', async () => {
    script.setBehaviour('CreateInstance', { hang: true });
    const err = await provider.createInstance(bootstrapFor('slow', 'pool-7'), { ...ctx, timeoutMs: 300 }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/CreateInstance timed out after 300 ms/);
  });

  it('bounds a call only by its caller when no timeout is configured, so a slow create is not cut off', async () => {
    const config = providerConfigSchema.parse({ type: 'external', name: 'ext-slow', executable: script.executable, configFile: script.configFile, interfaceVersion });
    if (config.type !== 'external') throw new Error('expected an external provider config');
    expect(config.timeout).toBeUndefined();
    const slow = new ExternalProvider(config, HOST_ENV);
    script.setBehaviour('CreateInstance', { delayMs: 1_500 });
    const started = Date.now();
    expect(await slow.createInstance(bootstrapFor('slow-1', 'pool-7'), ctx)).toMatchObject({ name: 'slow-1', status: 'running' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(await slow.createInstance(bootstrapFor('slow-2', 'pool-7'), { ...ctx, timeoutMs: 20_000 })).toMatchObject({ name: 'slow-2' });
    script.setBehaviour('CreateInstance', { hang: true });
    const err = await slow.createInstance(bootstrapFor('slow-3', 'pool-7'), { ...ctx, timeoutMs: 300 }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/CreateInstance timed out after 300 ms/);
  });

  it('lets a configured timeout cap every call, a create whose caller allows longer included', async () => {
    const config = providerConfigSchema.parse({ type: 'external', name: 'ext-capped', executable: script.executable, configFile: script.configFile, interfaceVersion, timeout: '500ms' });
    if (config.type !== 'external') throw new Error('expected an external provider config');
    const capped = new ExternalProvider(config, HOST_ENV);
    script.setBehaviour('CreateInstance', { delayMs: 1_500 });
    const err = await capped.createInstance(bootstrapFor('capped-1', 'pool-7'), { ...ctx, timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect((err as Error).message).toMatch(/CreateInstance timed out after 500 ms/);
  });

  it('rejects with the abort reason and kills the executable when the signal aborts', async () => {
    script.setBehaviour('DeleteInstance', { hang: true });
    const abort = new AbortController();
    const pending = provider.deleteInstance('x', { ...ctx, signal: abort.signal });
    const pidFile = join(script.dir, 'state', 'hung-child.pid');
    await eventually(() => existsSync(pidFile));
    abort.abort(new Error('activity cancelled'));
    await expect(pending).rejects.toThrow('activity cancelled');
    const childPid = Number(readFileSync(pidFile, 'utf8'));
    expect(await eventually(() => !isRunning(childPid))).toBe(true);
  });

  it('reports an executable that cannot run as a non-retryable fault', async () => {
    const broken = new ExternalProvider({ name: 'broken', executable: join(script.dir, 'missing'), configFile: '', interfaceVersion, environmentPrefixes: [], timeout: 1000 }, {});
    const err = (await broken.listInstances(ctx).catch((e: unknown) => e)) as ProviderFaultError;
    expect(err).toBeInstanceOf(ProviderFaultError);
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('cannot run provider executable');
  });

  it('answers GetVersion', async () => {
    expect(await provider.getVersion(ctx)).toBe('v1.2.3');
  });

  if (v011) {
    it('exposes the v0.1.1 introspection commands', async () => {
      expect(await provider.getSupportedInterfaceVersions(ctx)).toEqual(['v0.1.0', 'v0.1.1']);
      expect(JSON.parse(await provider.getConfigJSONSchema(ctx))).toMatchObject({ type: 'object' });
      expect(JSON.parse(await provider.getExtraSpecsJSONSchema(ctx))).toMatchObject({ properties: { disk: { type: 'integer' } } });
      await provider.validatePoolInfo({ image: 'ubuntu', flavor: 'small', extraSpecs: { disk: 1 } }, ctx);
      await expect(provider.validatePoolInfo({ image: 'ubuntu', flavor: 'small', extraSpecs: { invalid: true } }, ctx)).rejects.toThrow(/extra specs must be valid/);
      expect(script.calls('ValidatePoolInfo')[0]!.env.GARM_COMMAND).toBe('ValidatePoolInfo');
    });
  } else {
    it('refuses the v0.1.1 commands without running the executable', async () => {
      await expect(provider.getSupportedInterfaceVersions(ctx)).rejects.toThrow(/needs interface version v0.1.1/);
      expect(script.calls()).toHaveLength(0);
    });
  }
});

describe('external provider config', () => {
  it('refuses a timeout of 0, naming the way to leave calls unbounded', () => {
    const parsed = providerConfigSchema.safeParse({ type: 'external', name: 'ext-zero', executable: '/bin/true', timeout: 0 });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ path: ['timeout'], message: expect.stringContaining('leave timeout out') });
  });
});
