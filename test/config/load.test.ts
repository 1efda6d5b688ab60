/**
 * Configuration mistakes that used to surface only once the server ran (a
 * short instance token key, an ignored second set of GitHub credentials) are
 * refused at load, naming where they came from.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../config/load';

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
