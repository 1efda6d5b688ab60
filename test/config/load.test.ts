/**
 * Configuration mistakes that used to surface only once the server ran (a
 * short instance token key, an ignored second set of GitHub credentials) are
 * refused at load, naming where they came from.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configWarnings, loadConfig, parseConfig } from '../../config/load';

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'runnerflow-config-')), 'runnerflow.yaml');
  writeFileSync(path, yaml);
  return path;
}

function secretFile(contents: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'runnerflow-secret-')), 'key');
  writeFileSync(path, contents);
  return path;
}

const fromEnv = (value: string) => ({
  RUNNERFLOW_CONFIG: configFile('api: { instanceTokenSecret: { env: TEST_INSTANCE_KEY } }\n'),
  TEST_INSTANCE_KEY: value,
});

const fromFile = (path: string) => ({ RUNNERFLOW_CONFIG: configFile(`api: { instanceTokenSecret: { file: ${JSON.stringify(path)} } }\n`) });

describe('api.instanceTokenSecret', () => {
  it('is accepted at 16 characters or more', () => {
    expect(loadConfig(fromEnv('0123456789abcdef')).config.api.instanceTokenSecret).toEqual({ env: 'TEST_INSTANCE_KEY' });
    expect(loadConfig(fromFile(secretFile('0123456789abcdef0123\n'))).config.api.instanceTokenSecret).toHaveProperty('file');
    expect(loadConfig({}).config.api.instanceTokenSecret).toBeUndefined();
  });

  it('is refused when shorter, naming the environment variable', () => {
    expect(() => loadConfig(fromEnv('short'))).toThrow(ConfigError);
    expect(() => loadConfig(fromEnv('short'))).toThrow(
      'api.instanceTokenSecret (environment variable TEST_INSTANCE_KEY) is 5 characters long; instance tokens need at least 16',
    );
  });

  it('is refused when shorter, naming the file', () => {
    const path = secretFile('0123456789abcde\n');
    expect(() => loadConfig(fromFile(path))).toThrow(`api.instanceTokenSecret (file ${path}) is 15 characters long; instance tokens need at least 16`);
  });

  it('is refused when its variable is empty or its file is empty, alike', () => {
    expect(() => loadConfig(fromEnv(''))).toThrow('api.instanceTokenSecret: secret environment variable TEST_INSTANCE_KEY is not set');
    const empty = secretFile(' \n');
    expect(() => loadConfig(fromFile(empty))).toThrow(`api.instanceTokenSecret: secret file ${empty} is empty`);
  });
});

describe('github.credentials names', () => {
  const pat = { type: 'pat', token: { env: 'SOME_TOKEN' } };

  it('refuses two entries that both default to "default"', () => {
    expect(() => parseConfig({ github: { credentials: [{ auth: pat }, { auth: pat }] } })).toThrow(
      'github.credentials.1.name: duplicate GitHub credentials name "default" (an entry without a name is named "default")',
    );
  });

  it('refuses a repeated name, naming it and where it is', () => {
    const credentials = [{ name: 'org-a', auth: pat }, { name: 'org-b', auth: pat }, { name: 'org-a', auth: pat }];
    expect(() => parseConfig({ github: { credentials } }, 'runnerflow.yaml')).toThrow(
      /^invalid runnerflow\.yaml:\ngithub\.credentials\.2\.name: duplicate GitHub credentials name "org-a"$/,
    );
  });

  it('accepts distinct names', () => {
    const config = parseConfig({ github: { credentials: [{ auth: pat }, { name: 'org-b', auth: pat }] } });
    expect(config.github.credentials.map((c) => c.name)).toEqual(['default', 'org-b']);
  });
});

describe('warnings at start', () => {
  const pat = { type: 'pat', token: { env: 'GH_TOKEN' } };

  it('say when GitHub is configured and controllerId is left at its default, and what to do', () => {
    const [warning, ...more] = configWarnings(parseConfig({ github: { credentials: [{ auth: pat }] } }));
    expect(more).toEqual([]);
    expect(warning).toContain('controllerId is the default "runnerflow"');
    expect(warning).toContain('a controllerId of its own');
  });

  it('are none with a controllerId of the installation’s own, or with no GitHub to share', () => {
    expect(configWarnings(parseConfig({ controllerId: 'ci-east', github: { credentials: [{ auth: pat }] } }))).toEqual([]);
    expect(configWarnings(parseConfig({}))).toEqual([]);
  });
});

describe('pools of the file', () => {
  const pat = { type: 'pat', token: { env: 'SOME_TOKEN' } };
  const pool = (overrides: Record<string, unknown> = {}) => ({
    name: 'x',
    github: { scope: { kind: 'org', org: 'acme' } },
    labels: ['linux'],
    provider: 'local',
    ...overrides,
  });

  it('must name a configured provider, said with the pool and the field', () => {
    expect(() => parseConfig({ github: { credentials: [{ auth: pat }] }, pools: [pool({ provider: 'nope' })] }, 'runnerflow.yaml')).toThrow(
      /^invalid runnerflow\.yaml:\npools\.0\.provider: pool "x": no provider named "nope" is configured \(configured: local\)$/,
    );
  });

  it('must name configured GitHub credentials', () => {
    expect(() => parseConfig({ github: { credentials: [{ name: 'org-a', auth: pat }] }, pools: [pool(), pool({ name: 'y', github: { credentials: 'org-b', scope: { kind: 'org', org: 'acme' } } })] })).toThrow(
      'pools.0.github.credentials: pool "x": no GitHub credentials named "default" are configured (configured: org-a)\npools.1.github.credentials: pool "y": no GitHub credentials named "org-b" are configured (configured: org-a)',
    );
  });

  it('must name a runner group, when it names one', () => {
    expect(() => parseConfig({ github: { credentials: [{ auth: pat }] }, pools: [pool({ runnerGroup: ' ' })] })).toThrow(
      'pools.0.runnerGroup: pool "x": must name a runner group (GitHub\'s own is "Default")',
    );
  });

  it('may name the local provider a config without providers gets', () => {
    expect(parseConfig({ github: { credentials: [{ auth: pat }] }, pools: [pool()] }).pools.map((p) => p.provider)).toEqual(['local']);
  });

  it('refuses extra specs larger than 16 KiB, saying how large they are', () => {
    const extraSpecs = { blob: 'x'.repeat(20_000) };
    expect(() => parseConfig({ github: { credentials: [{ auth: pat }] }, pools: [pool({ extraSpecs })] })).toThrow(
      'pools.0.extraSpecs: is 20011 bytes as JSON; at most 16384 (16 KiB)',
    );
  });
});

describe('start-up settings checked at load', () => {
  it('refuses a listen address that is not host:port, in the file and in RUNNERFLOW_LISTEN', () => {
    for (const listen of ['127.0.0.1:99999', 'not-an-address']) {
      expect(() => parseConfig({ api: { listen } })).toThrow(`api.listen: listen address "${listen}" is not host:port`);
      expect(() => loadConfig({ RUNNERFLOW_LISTEN: listen })).toThrow(ConfigError);
      expect(() => loadConfig({ RUNNERFLOW_LISTEN: listen })).toThrow(`RUNNERFLOW_LISTEN: listen address "${listen}" is not host:port`);
    }
    expect(parseConfig({ api: { listen: '[::1]:0' } }).api.listen).toBe('[::1]:0');
  });

  it('refuses a sweep interval under a second', () => {
    expect(() => parseConfig({ sweep: { interval: 0 } })).toThrow('sweep.interval: must be at least 1s');
    expect(() => parseConfig({ sweep: { interval: '500ms' } })).toThrow('sweep.interval: must be at least 1s');
    expect(parseConfig({ sweep: { interval: '1s' } }).sweep.interval).toBe(1_000);
  });

  it('takes the organisation repositories a sweep looks into for lost jobs, 20 unless told, and refuses what is no count of them', () => {
    expect(parseConfig({}).sweep.lostJobRepositories).toBe(20);
    expect(parseConfig({ sweep: { lostJobRepositories: 0 } }).sweep.lostJobRepositories).toBe(0);
    expect(() => parseConfig({ sweep: { lostJobRepositories: -1 } })).toThrow('sweep.lostJobRepositories');
    expect(() => parseConfig({ sweep: { lostJobRepositories: 2.5 } })).toThrow('sweep.lostJobRepositories');
    expect(() => parseConfig({ sweep: { lostJobRepositories: 101 } })).toThrow('sweep.lostJobRepositories');
  });

  it('takes the organisation repositories a sweep looks into in turn, 5 unless told, and refuses what is no count of them', () => {
    expect(parseConfig({}).sweep.lostJobRound).toBe(5);
    expect(parseConfig({ sweep: { lostJobRound: 0 } }).sweep.lostJobRound).toBe(0);
    expect(parseConfig({ sweep: { lostJobRound: 100 } }).sweep.lostJobRound).toBe(100);
    expect(() => parseConfig({ sweep: { lostJobRound: -1 } })).toThrow('sweep.lostJobRound');
    expect(() => parseConfig({ sweep: { lostJobRound: 1.5 } })).toThrow('sweep.lostJobRound');
    expect(() => parseConfig({ sweep: { lostJobRound: 101 } })).toThrow('sweep.lostJobRound');
  });

  it('takes the previous webhook secret of a rotation from the file or RUNNERFLOW_PREVIOUS_WEBHOOK_SECRET, never inline', () => {
    expect(parseConfig({ api: { previousWebhookSecret: { env: 'OLD_HOOK_SECRET' } } }).api.previousWebhookSecret).toEqual({ env: 'OLD_HOOK_SECRET' });
    expect(loadConfig({ RUNNERFLOW_PREVIOUS_WEBHOOK_SECRET: 'old' }).config.api.previousWebhookSecret).toEqual({ env: 'RUNNERFLOW_PREVIOUS_WEBHOOK_SECRET' });
    expect(loadConfig({}).config.api.previousWebhookSecret).toBeUndefined();
    expect(() => parseConfig({ api: { previousWebhookSecret: 'old' } })).toThrow('api.previousWebhookSecret: a secret is never written in the config');
  });

  it('says how to give a secret that was written inline', () => {
    const credentials = [{ auth: { type: 'pat', token: 'ghp_x' } }];
    expect(() => parseConfig({ github: { credentials } })).toThrow(
      'github.credentials.0.auth.token: a secret is never written in the config: use { env: NAME } (an environment variable) or { file: PATH } (a file holding it)',
    );
    expect(() => parseConfig({ api: { adminToken: { value: 'x' } } })).toThrow('api.adminToken: expected { env: NAME } or { file: PATH }');
  });
});
