/**
 * A secret file replaced while the process runs is read again, at most once per interval (at once
 * after GitHub refused the value), and a replacement caught half-way keeps the last value.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RotatingSecret } from '../../config/rotating-secret';

let dir: string;
let clock = 0;
const now = () => clock;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rotating-secret-'));
  clock = 1_000_000;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('a secret given as a file', () => {
  it('is read again once the interval has passed and the file changed, and not before', () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_old\n');
    const secret = new RotatingSecret({ file }, {}, 10_000, now);
    expect(secret.read()).toEqual({ value: 'ghp_old', changed: false });
    writeFileSync(file, 'ghp_new_and_longer\n');
    clock += 9_999;
    expect(secret.read()).toEqual({ value: 'ghp_old', changed: false });
    clock += 1;
    expect(secret.read()).toEqual({ value: 'ghp_new_and_longer', changed: true });
    clock += 10_000;
    expect(secret.read()).toEqual({ value: 'ghp_new_and_longer', changed: false });
  });

  it('is looked at before the interval has passed once its value was refused', () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_old');
    const secret = new RotatingSecret({ file }, {}, 600_000, now);
    writeFileSync(file, 'ghp_rotated');
    secret.recheckSoon();
    expect(secret.read()).toEqual({ value: 'ghp_rotated', changed: true });
    // The look after that waits for the interval again.
    writeFileSync(file, 'ghp_third_value');
    expect(secret.read().value).toBe('ghp_rotated');
  });

  it('is read after a refusal even when the file looks unchanged (same size, same time)', () => {
    const file = join(dir, 'token');
    // Whole seconds, which the file system keeps exactly.
    const at = 1_700_000_000;
    writeFileSync(file, 'ghp_aaaa');
    utimesSync(file, at, at);
    const secret = new RotatingSecret({ file }, {}, 1_000, now);
    writeFileSync(file, 'ghp_bbbb');
    utimesSync(file, at, at);
    clock += 1_000;
    expect(secret.read().value).toBe('ghp_aaaa');
    secret.recheckSoon();
    expect(secret.read()).toEqual({ value: 'ghp_bbbb', changed: true });
  });

  it('is not called changed when the file is written again with the same value', () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_same');
    const secret = new RotatingSecret({ file }, {}, 1_000, now);
    writeFileSync(file, 'ghp_same\n');
    clock += 1_000;
    expect(secret.read()).toEqual({ value: 'ghp_same', changed: false });
  });

  it('follows a secret volume that swaps its data directory under a symlink', () => {
    // How Kubernetes updates a mounted secret: `..data` points at a new directory, the file name stays.
    const mount = join(dir, 'mount');
    mkdirSync(join(dir, 'v1'));
    mkdirSync(join(dir, 'v2'));
    mkdirSync(mount);
    writeFileSync(join(dir, 'v1', 'key.pem'), 'first key');
    writeFileSync(join(dir, 'v2', 'key.pem'), 'other key');
    symlinkSync(join(dir, 'v1'), join(mount, '..data'));
    symlinkSync(join('..data', 'key.pem'), join(mount, 'key.pem'));
    const secret = new RotatingSecret({ file: join(mount, 'key.pem') }, {}, 1_000, now);
    expect(secret.read().value).toBe('first key');
    symlinkSync(join(dir, 'v2'), join(mount, '..data_tmp'));
    renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
    clock += 1_000;
    expect(secret.read()).toEqual({ value: 'other key', changed: true });
  });

  it('keeps its last value while the file is missing or empty half-way through a replacement, and says why', () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'ghp_old');
    const secret = new RotatingSecret({ file }, {}, 1_000, now);
    unlinkSync(file);
    clock += 1_000;
    expect(secret.read()).toEqual({ value: 'ghp_old', changed: false, problem: `cannot read secret file ${file}: ENOENT` });
    writeFileSync(file, '');
    clock += 1_000;
    expect(secret.read()).toEqual({ value: 'ghp_old', changed: false, problem: `secret file ${file} is empty` });
    writeFileSync(file, 'ghp_new');
    clock += 1_000;
    expect(secret.read()).toEqual({ value: 'ghp_new', changed: true });
  });

  it('that cannot be read at start fails as before, naming the file', () => {
    expect(() => new RotatingSecret({ file: join(dir, 'absent') }, {}, 1_000, now)).toThrow(`cannot read secret file ${join(dir, 'absent')}: ENOENT`);
  });
});

describe('a secret given as an environment variable', () => {
  it('is read once: a running process cannot see its environment change', () => {
    const env: NodeJS.ProcessEnv = { TOKEN: 'ghp_first' };
    const secret = new RotatingSecret({ env: 'TOKEN' }, env, 1_000, now);
    env.TOKEN = 'ghp_second';
    clock += 5_000;
    secret.recheckSoon();
    expect(secret.read()).toEqual({ value: 'ghp_first', changed: false });
  });
});
