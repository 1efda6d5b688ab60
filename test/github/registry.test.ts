import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../config/load';
import { OctokitGitHub } from '../../github/octokit-github';
import { createGitHubRegistry } from '../../github/registry';
import type { GitHubSimulator } from '../../github/simulator/server';
import { startSimulatedGitHub } from './support/simulated-github';

let sim: GitHubSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe('createGitHubRegistry', () => {
  it('builds one port per credentials name, with its secret, and caches it', async () => {
    sim = (await startSimulatedGitHub()).sim;
    const config = parseConfig({
      github: {
        credentials: [
          { name: 'default', apiUrl: sim.url, webUrl: 'https://ghes.example.com', auth: { type: 'pat', token: { env: 'SIM_TOKEN' } } },
        ],
      },
    });
    const registry = createGitHubRegistry(config, { SIM_TOKEN: 'ghp_x' });
    const port = registry.get('default');
    expect(port).toBeInstanceOf(OctokitGitHub);
    expect(registry.get('default')).toBe(port);
    expect(port.webUrl).toBe('https://ghes.example.com');
    expect(await port.findRunnerByName({ kind: 'org', org: 'o' }, 'none')).toBeUndefined();
    expect(sim.stats().totalApiCalls).toBe(1);
  });

  it('names the missing credentials and the configured ones', () => {
    const config = parseConfig({ github: { credentials: [{ name: 'main', auth: { type: 'pat', token: { env: 'T' } } }] } });
    expect(() => createGitHubRegistry(config, { T: 'x' }).get('other')).toThrow('no GitHub credentials named "other" in github.credentials (configured: "main")');
  });

  it('reports a secret that is not set, without its value', () => {
    const config = parseConfig({ github: { credentials: [{ name: 'main', auth: { type: 'pat', token: { env: 'UNSET_TOKEN' } } }] } });
    expect(() => createGitHubRegistry(config, {}).get('main')).toThrow(/UNSET_TOKEN is not set/);
  });

  it('reads an App private key from a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'runnerflow-registry-'));
    const keyFile = join(dir, 'app.pem');
    writeFileSync(keyFile, '-----BEGIN PRIVATE KEY-----\nnot-a-real-key\n-----END PRIVATE KEY-----\n');
    const config = parseConfig({
      github: { credentials: [{ name: 'app', auth: { type: 'app', appId: 1, installationId: 2, privateKey: { file: keyFile } } }] },
    });
    expect(createGitHubRegistry(config, {}).get('app')).toBeInstanceOf(OctokitGitHub);
  });
});
