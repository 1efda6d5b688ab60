/**
 * GitHub credentials rotated under a running process: the secret file is replaced (a new token,
 * a new App private key), GitHub stops taking the old one, and the registry's next call after the
 * refusal uses the new value, through the real Octokit clients against the simulator, without
 * waiting for the file's look interval and without a restart.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../config/load';
import { GitHubApiError, type GitHubScope } from '../../github/port';
import { createGitHubRegistry } from '../../github/registry';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';

const scope: GitHubScope = { kind: 'repo', owner: 'acme', repo: 'widgets' };
/** Longer than any test: only GitHub's refusal can make the registry look at the file this soon. */
const RECHECK = '10m';

let sim: GitHubSimulator;
let dir: string;
beforeEach(async () => {
  sim = await startGitHubSimulator({ onError: () => undefined });
  dir = mkdtempSync(join(tmpdir(), 'credentials-rotation-'));
});
afterEach(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

function recordingLogger() {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn') } };
}

/** Token credentials named `default`, their token in `file`. */
const tokenRegistry = (file: string, logger?: ReturnType<typeof recordingLogger>['logger']) =>
  createGitHubRegistry(parseConfig({ github: { secretRecheck: RECHECK, credentials: [{ name: 'default', apiUrl: sim.url, auth: { type: 'pat', token: { file } } }] } }), {}, logger);

const refusal = async (call: Promise<unknown>): Promise<number | undefined> => {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof GitHubApiError ? err.status : undefined;
};

describe('a token replaced in its file', () => {
  it('is used from the call after GitHub refused the old one', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_first_token\n');
    const { lines, logger } = recordingLogger();
    const registry = tokenRegistry(file, logger);
    await registry.get('default').listRunners(scope);

    // The token expires at GitHub; the operator writes its successor into the file.
    sim.revokeToken('ghp_first_token');
    writeFileSync(file, 'ghp_second_token\n');
    // The port already built still presents the old token, once: GitHub's 401 says to look again.
    expect(await refusal(registry.get('default').listRunners(scope))).toBe(401);
    await expect(registry.get('default').listRunners(scope)).resolves.toEqual([]);
    const credential = await registry.get('default').createRunnerCredential({ scope, name: 'after-rotation', labels: ['linux'], runnerGroupId: 1, workFolder: '_work', jit: true });
    expect(credential.kind).toBe('jit');

    expect(lines.filter((l) => l.level === 'info').map((l) => l.message)).toEqual(['github credentials: their secret file has a new value; calls from now on use it']);
    expect(JSON.stringify(lines)).not.toMatch(/ghp_(first|second)_token/);
  });

  it('is not used while the old one is still taken and the look interval has not passed', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_first_token');
    const registry = tokenRegistry(file);
    const port = registry.get('default');
    writeFileSync(file, 'ghp_second_token');
    await registry.get('default').listRunners(scope);
    expect(registry.get('default')).toBe(port);
  });

  it('that cannot be read yet leaves the old one in use, with a warning naming the file', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_first_token');
    const { lines, logger } = recordingLogger();
    const registry = tokenRegistry(file, logger);
    await registry.get('default').listRunners(scope);
    sim.revokeToken('ghp_first_token');
    writeFileSync(file, '');
    expect(await refusal(registry.get('default').listRunners(scope))).toBe(401);
    expect(await refusal(registry.get('default').listRunners(scope))).toBe(401);
    expect(lines.filter((l) => l.level === 'warn')).toContainEqual({
      level: 'warn',
      message: 'github credentials: their secret file changed but cannot be read yet; the last value stays in use',
      fields: { credentials: 'default', problem: `secret file ${file} is empty` },
    });
    writeFileSync(file, 'ghp_second_token');
    await expect(registry.get('default').listRunners(scope)).resolves.toEqual([]);
  });
});

describe("an App's private key replaced in its file", () => {
  it('signs the next installation token asked for once GitHub refused the deleted key', async () => {
    const keyPair = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
    const [oldKey, newKey] = [keyPair(), keyPair()];
    const privatePem = (key: ReturnType<typeof keyPair>) => key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const publicPem = (key: ReturnType<typeof keyPair>) => key.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const file = join(dir, 'app.pem');
    writeFileSync(file, privatePem(oldKey));
    const config = parseConfig({ github: { secretRecheck: RECHECK, credentials: [{ name: 'app', apiUrl: sim.url, auth: { type: 'app', appId: 1, installationId: 1, privateKey: { file } } }] } });
    const registry = createGitHubRegistry(config, {});

    // The App's old key is deleted at GitHub before this process asks for an installation token
    // (one minted earlier would go on working for its hour, as GitHub's do).
    sim.setAppKeys([publicPem(newKey)]);
    expect(await refusal(registry.get('app').listRunners(scope))).toBe(401);
    writeFileSync(file, privatePem(newKey));
    await expect(registry.get('app').listRunners(scope)).resolves.toEqual([]);
  });
});
