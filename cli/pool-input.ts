/**
 * Pool settings from `--file` (YAML or JSON) and/or flags, flags winning. The
 * API validates the result; here only the flags' own syntax is checked.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { CliError, usageError } from './errors';

export const POOL_FLAGS = {
  file: { type: 'string', short: 'f' },
  name: { type: 'string' },
  provider: { type: 'string' },
  labels: { type: 'string' },
  credentials: { type: 'string' },
  repo: { type: 'string' },
  org: { type: 'string' },
  enterprise: { type: 'string' },
  image: { type: 'string' },
  flavor: { type: 'string' },
  'os-type': { type: 'string' },
  'os-arch': { type: 'string' },
  'min-idle': { type: 'string' },
  'max-runners': { type: 'string' },
  priority: { type: 'string' },
  'bootstrap-timeout': { type: 'string' },
  'idle-timeout': { type: 'string' },
  'runner-prefix': { type: 'string' },
  'runner-group': { type: 'string' },
  'runner-group-id': { type: 'string' },
  enabled: { type: 'string' },
  ephemeral: { type: 'string' },
  mode: { type: 'string' },
  'scale-set-name': { type: 'string' },
  'min-runners': { type: 'string' },
} as const;

export type PoolFlagValues = { [K in keyof typeof POOL_FLAGS]?: string };

type Settings = Record<string, unknown>;

export function readPoolFile(path: string): Settings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new CliError(`${path} is neither YAML nor JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CliError(`${path} must hold one pool object`);
  return parsed as Settings;
}

function integer(flag: string, value: string): number {
  if (!/^-?\d+$/.test(value)) throw usageError(`--${flag} must be an integer, got "${value}"`);
  return Number(value);
}

function boolean(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw usageError(`--${flag} must be true or false, got "${value}"`);
}

function scopeFromFlags(flags: PoolFlagValues): Settings | undefined {
  const given = (['repo', 'org', 'enterprise'] as const).filter((k) => flags[k] !== undefined);
  if (given.length > 1) throw usageError(`give only one of --repo, --org, --enterprise`);
  if (flags.repo !== undefined) {
    const [owner, repo, ...rest] = flags.repo.split('/');
    if (!owner || !repo || rest.length > 0) throw usageError(`--repo must be owner/repo, got "${flags.repo}"`);
    return { kind: 'repo', owner, repo };
  }
  if (flags.org !== undefined) return { kind: 'org', org: flags.org };
  if (flags.enterprise !== undefined) return { kind: 'enterprise', enterprise: flags.enterprise };
  return undefined;
}

/** `base` (a file, or the current settings on update) with the flags applied on top. */
export function applyPoolFlags(base: Settings, flags: PoolFlagValues): Settings {
  const out: Settings = { ...base };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) out[key] = value;
  };
  set('name', flags.name);
  set('provider', flags.provider);
  set('labels', flags.labels?.split(',').map((l) => l.trim()).filter(Boolean));
  set('image', flags.image);
  set('flavor', flags.flavor);
  set('osType', flags['os-type']);
  set('osArch', flags['os-arch']);
  set('minIdleRunners', flags['min-idle'] === undefined ? undefined : integer('min-idle', flags['min-idle']));
  set('maxRunners', flags['max-runners'] === undefined ? undefined : integer('max-runners', flags['max-runners']));
  set('priority', flags.priority === undefined ? undefined : integer('priority', flags.priority));
  set('bootstrapTimeout', flags['bootstrap-timeout']);
  set('idleTimeout', flags['idle-timeout']);
  set('runnerPrefix', flags['runner-prefix']);
  set('runnerGroup', flags['runner-group']);
  set('runnerGroupId', flags['runner-group-id'] === undefined ? undefined : integer('runner-group-id', flags['runner-group-id']));
  set('enabled', flags.enabled === undefined ? undefined : boolean('enabled', flags.enabled));
  set('ephemeral', flags.ephemeral === undefined ? undefined : boolean('ephemeral', flags.ephemeral));
  set('mode', flags.mode);
  if (flags['scale-set-name'] !== undefined || flags['min-runners'] !== undefined) {
    const scaleSet = { ...((base.scaleSet as Settings | undefined) ?? {}) };
    if (flags['scale-set-name'] !== undefined) scaleSet.name = flags['scale-set-name'];
    if (flags['min-runners'] !== undefined) scaleSet.minRunners = integer('min-runners', flags['min-runners']);
    out.scaleSet = scaleSet;
    out.mode ??= 'scaleSet';
  }
  const scope = scopeFromFlags(flags);
  if (scope || flags.credentials !== undefined) {
    const github = { ...((base.github as Settings | undefined) ?? {}) };
    if (scope) github.scope = scope;
    if (flags.credentials !== undefined) github.credentials = flags.credentials;
    out.github = github;
  }
  return out;
}
