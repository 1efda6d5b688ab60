/**
 * A GARM external provider executable for tests, written in plain Node so it needs
 * nothing from the host environment (which the provider replaces). Machines are JSON
 * files in a state directory named by its config file; every call is recorded with
 * its environment and stdin; `behaviour.json` overrides what a command does.
 * Like garm-provider-common, it refuses ListInstances without GARM_POOL_ID, and in
 * v0.1.1 GetInstance and DeleteInstance too. A `regional` script plays a cloud whose
 * region comes from the pool's extra specs: a machine is made in the `region` of
 * GARM_POOL_EXTRASPECS, and only calls naming that region see it.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExternalProvider } from '../../../providers/external/provider';

export interface ScriptBehaviour {
  exit?: number;
  stdout?: string;
  stderr?: string;
  /** Sleeps forever (after spawning a child that also sleeps, to check the group is killed). */
  hang?: boolean;
  /** Takes this long before doing the command (or the rest of this behaviour), like a slow cloud. */
  delayMs?: number;
}

export interface RecordedCall {
  command: string;
  env: Record<string, string>;
  stdin: string;
}

const SCRIPT = String.raw`
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const config = JSON.parse(fs.readFileSync(process.env.GARM_PROVIDER_CONFIG_FILE, 'utf8'));
const dir = config.stateDir;
const command = process.env.GARM_COMMAND;
const stdin = fs.readFileSync(0, 'utf8');
fs.appendFileSync(path.join(dir, 'calls.jsonl'), JSON.stringify({ command, env: process.env, stdin }) + '\n');

const needsPool = command === 'ListInstances' || (process.env.GARM_INTERFACE_VERSION === 'v0.1.1' && (command === 'GetInstance' || command === 'DeleteInstance'));
if (needsPool && !process.env.GARM_POOL_ID) { process.stderr.write('missing pool ID\n'); process.exit(1); }

const behaviours = fs.existsSync(path.join(dir, 'behaviour.json')) ? JSON.parse(fs.readFileSync(path.join(dir, 'behaviour.json'), 'utf8')) : {};
const b = behaviours[command];
if (b && b.delayMs) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, b.delayMs);
if (b && (b.hang || b.exit !== undefined || b.stdout !== undefined || b.stderr !== undefined)) {
  if (b.hang) {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    fs.writeFileSync(path.join(dir, 'hung-child.pid'), String(child.pid));
    setInterval(() => {}, 1000);
    return;
  }
  if (b.stderr) process.stderr.write(b.stderr);
  if (b.stdout !== undefined) process.stdout.write(b.stdout);
  process.exit(b.exit ?? 0);
}

const instances = path.join(dir, 'instances');
fs.mkdirSync(instances, { recursive: true });
const extraSpecs = JSON.parse(Buffer.from(process.env.GARM_POOL_EXTRASPECS || '', 'base64').toString() || '{}');
const region = config.regional ? extraSpecs.region : undefined;
const file = (name) => path.join(instances, encodeURIComponent(name) + '.json');
// A machine another call deletes between the listing and its read is gone, as a cloud's listing says.
const readMachine = (f) => { try { return JSON.parse(fs.readFileSync(path.join(instances, f), 'utf8')); } catch (err) { if (err.code === 'ENOENT') return undefined; throw err; } };
const all = () => fs.readdirSync(instances).map(readMachine).filter((m) => m !== undefined && m.region === region);
const find = (id) => all().find((m) => m.name === id || m.provider_id === id);
const publicView = (m) => ({ provider_id: m.provider_id, name: m.name, os_type: m.os_type, os_name: 'ubuntu', os_version: '24.04', os_arch: m.arch, addresses: [{ address: '127.0.0.2', type: 'private' }], status: m.status, provider_fault: m.fault ? Buffer.from(m.fault).toString('base64') : '' });
const notFound = (id) => { process.stderr.write('instance ' + id + ' not found\n'); process.exit(30); };

switch (command) {
  case 'CreateInstance': {
    const boot = JSON.parse(stdin);
    if (fs.existsSync(file(boot.name))) { process.stderr.write('instance ' + boot.name + ' already exists\n'); process.exit(31); }
    const m = { provider_id: 'ext-' + boot.name, name: boot.name, os_type: boot.os_type, arch: boot.arch, status: 'running', controller: process.env.GARM_CONTROLLER_ID, pool: process.env.GARM_POOL_ID, region };
    fs.writeFileSync(file(boot.name), JSON.stringify(m));
    process.stdout.write(JSON.stringify(publicView(m)));
    break;
  }
  case 'GetInstance': {
    const m = find(process.env.GARM_INSTANCE_ID);
    if (!m) notFound(process.env.GARM_INSTANCE_ID);
    process.stdout.write(JSON.stringify(publicView(m)));
    break;
  }
  case 'DeleteInstance': {
    const m = find(process.env.GARM_INSTANCE_ID);
    if (!m) notFound(process.env.GARM_INSTANCE_ID);
    fs.rmSync(file(m.name));
    break;
  }
  case 'ListInstances': {
    const pool = process.env.GARM_POOL_ID;
    const mine = all().filter((m) => m.controller === process.env.GARM_CONTROLLER_ID && m.pool === pool);
    process.stdout.write(JSON.stringify(mine.map(publicView)));
    break;
  }
  case 'StartInstance':
  case 'StopInstance': {
    const m = find(process.env.GARM_INSTANCE_ID);
    if (!m) notFound(process.env.GARM_INSTANCE_ID);
    m.status = command === 'StartInstance' ? 'running' : 'stopped';
    fs.writeFileSync(file(m.name), JSON.stringify(m));
    break;
  }
  case 'RemoveAllInstances':
    for (const m of all()) if (m.controller === process.env.GARM_CONTROLLER_ID) fs.rmSync(file(m.name));
    break;
  case 'GetVersion':
    process.stdout.write('v1.2.3');
    break;
  case 'GetSupportedInterfaceVersions':
    process.stdout.write(JSON.stringify(['v0.1.0', 'v0.1.1']));
    break;
  case 'ValidatePoolInfo': {
    const pool = JSON.parse(stdin || '{}');
    if (!pool.image || extraSpecs.invalid) { process.stderr.write('image is required and extra specs must be valid\n'); process.exit(1); }
    break;
  }
  case 'GetConfigJSONSchema':
    process.stdout.write(JSON.stringify({ type: 'object', properties: { stateDir: { type: 'string' } } }));
    break;
  case 'GetExtraSpecsJSONSchema':
    process.stdout.write(JSON.stringify({ type: 'object', properties: { disk: { type: 'integer' } } }));
    break;
  default:
    process.stderr.write('unknown command ' + command + '\n');
    process.exit(1);
}
`;

export interface ExternalScriptFixture {
  dir: string;
  executable: string;
  configFile: string;
  setBehaviour(command: string, behaviour: ScriptBehaviour): void;
  clearBehaviours(): void;
  calls(command?: string): RecordedCall[];
  remove(): void;
}

export interface ExternalScriptOptions {
  /** Machines live in the region their create's extra specs named (see above). */
  regional?: boolean;
}

/** Writes the executable, its config file and state directory into a fresh temp dir. */
export function writeExternalScript(options: ExternalScriptOptions = {}): ExternalScriptFixture {
  const dir = mkdtempSync(join(tmpdir(), 'runnerflow-external-'));
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir);
  const executable = join(dir, 'garm-provider-test');
  writeFileSync(executable, `#!${process.execPath}\n${SCRIPT}`);
  chmodSync(executable, 0o755);
  const configFile = join(dir, 'provider-config.json');
  writeFileSync(configFile, JSON.stringify({ stateDir, regional: options.regional === true }));
  const behaviourFile = join(stateDir, 'behaviour.json');
  const readBehaviours = (): Record<string, ScriptBehaviour> => (existsSync(behaviourFile) ? (JSON.parse(readFileSync(behaviourFile, 'utf8')) as Record<string, ScriptBehaviour>) : {});
  return {
    dir,
    executable,
    configFile,
    setBehaviour: (command, behaviour) => writeFileSync(behaviourFile, JSON.stringify({ ...readBehaviours(), [command]: behaviour })),
    clearBehaviours: () => rmSync(behaviourFile, { force: true }),
    calls: (command) => {
      const file = join(stateDir, 'calls.jsonl');
      if (!existsSync(file)) return [];
      const all = readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RecordedCall);
      return command ? all.filter((c) => c.command === command) : all;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** An ExternalProvider named `name` running a fresh test script, as GARM would run a real one. */
export function externalProviderOnScript(
  name: string,
  interfaceVersion: 'v0.1.0' | 'v0.1.1',
  options: ExternalScriptOptions = {},
): { provider: ExternalProvider; script: ExternalScriptFixture } {
  const script = writeExternalScript(options);
  const provider = new ExternalProvider({ name, executable: script.executable, configFile: script.configFile, interfaceVersion, environmentPrefixes: [], timeout: 20_000 });
  return { provider, script };
}
