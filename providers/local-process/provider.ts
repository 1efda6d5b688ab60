/**
 * Runners as local child processes, one working directory each. Everything the
 * provider knows lives in `<workDir>/<name>/instance.json`, so a new worker
 * process (after a restart) finds, checks and stops runners started by an old one.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LocalProcessProviderConfig } from '../../config/schema';
import {
  ProviderFaultError,
  ProviderNotFoundError,
  type BootstrapInstance,
  type ProviderCallContext,
  type ProviderInstance,
  type ProviderPort,
} from '../port';
import { bootstrapSecrets, redact } from '../secrets';
import { isRunning, processStartTicks, stopProcessTree } from './process-tree';
import { defaultRunnerCommand, substituteCommand } from './runner-command';

export type LocalProcessProviderOptions = Pick<LocalProcessProviderConfig, 'name' | 'workDir' | 'command' | 'env' | 'stopTimeout'>;

/** What instance.json holds; never a secret. */
export interface LocalInstanceRecord {
  name: string;
  controllerId: string;
  poolId?: string;
  pid: number;
  /** /proc start time of pid, so a reused pid is not mistaken for the runner. */
  startTicks?: string;
  startedAt: string;
  /** The command as run, with secrets redacted. */
  command: string[];
}

export const RECORD_FILE = 'instance.json';
export const LOG_FILE = 'runner.log';
export const EXIT_STATUS_FILE = 'exit-status';
/** A directory without a record older than this is a create that died half-way. */
const ABANDONED_CREATE_MS = 30_000;

export class LocalProcessProvider implements ProviderPort {
  readonly name: string;
  private readonly workDir: string;

  constructor(
    private readonly config: LocalProcessProviderOptions,
    private readonly hostEnv: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = config.name;
    this.workDir = resolve(config.workDir);
  }

  async createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance> {
    if (ctx.signal?.aborted) throw ctx.signal.reason;
    const dir = this.instanceDir(bootstrap.name);
    mkdirSync(this.workDir, { recursive: true });
    if (!this.claim(dir)) {
      const existing = await this.waitForRecord(dir);
      if (existing) return this.toInstance(existing, dir);
      // A create that died before writing its record: start over.
      rmSync(dir, { recursive: true, force: true });
      if (!this.claim(dir)) throw new ProviderFaultError(this.name, `instance ${bootstrap.name} is being created by someone else`);
    }
    try {
      return this.toInstance(this.start(bootstrap, ctx, dir), dir);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    const dir = this.instanceDir(instanceId);
    const record = readRecord(dir);
    if (record) await stopProcessTree(record.pid, record.startTicks, this.config.stopTimeout, ctx.signal);
    rmSync(dir, { recursive: true, force: true });
    if (ctx.signal?.aborted) throw ctx.signal.reason;
  }

  async getInstance(instanceId: string, _ctx: ProviderCallContext): Promise<ProviderInstance> {
    const dir = this.instanceDir(instanceId);
    const record = readRecord(dir);
    if (!record) throw new ProviderNotFoundError(this.name, instanceId);
    return this.toInstance(record, dir);
  }

  async listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    if (!existsSync(this.workDir)) return [];
    return readdirSync(this.workDir)
      .map((entry) => ({ dir: join(this.workDir, entry), record: readRecord(join(this.workDir, entry)) }))
      .filter((e): e is { dir: string; record: LocalInstanceRecord } => e.record !== undefined)
      .filter(({ record }) => record.controllerId === ctx.controllerId && (!ctx.poolId || record.poolId === ctx.poolId))
      .map(({ record, dir }) => this.toInstance(record, dir));
  }

  /** Stopping a local runner ends it; there is nothing to start again. */
  async stopInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    const record = readRecord(this.instanceDir(instanceId));
    if (!record) throw new ProviderNotFoundError(this.name, instanceId);
    await stopProcessTree(record.pid, record.startTicks, this.config.stopTimeout, ctx.signal);
  }

  private instanceDir(name: string): string {
    return join(this.workDir, encodeURIComponent(name));
  }

  /** mkdir is atomic: the one that makes the directory creates the runner. */
  private claim(dir: string): boolean {
    try {
      mkdirSync(dir);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
  }

  private async waitForRecord(dir: string): Promise<LocalInstanceRecord | undefined> {
    for (;;) {
      const record = readRecord(dir);
      if (record) return record;
      const stat = statSync(dir, { throwIfNoEntry: false });
      if (!stat || Date.now() - stat.mtimeMs > ABANDONED_CREATE_MS) return undefined;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private start(bootstrap: BootstrapInstance, ctx: ProviderCallContext, dir: string): LocalInstanceRecord {
    const template = this.config.command ?? defaultRunnerCommand();
    if (!template) {
      throw new ProviderFaultError(this.name, `provider ${this.name} has no command configured and the simulator runner agent is not installed`, undefined, false);
    }
    const [program, ...args] = substituteCommand(template, { bootstrap, workdir: dir });
    const log = openSync(join(dir, LOG_FILE), 'a');
    let pid: number | undefined;
    try {
      // The shell records the runner's exit status, readable after a worker restart. Written aside
      // and renamed, so the file exists only once it holds the status.
      const child = spawn('/bin/sh', ['-c', `"$@"; echo $? > ${EXIT_STATUS_FILE}.tmp && mv ${EXIT_STATUS_FILE}.tmp ${EXIT_STATUS_FILE}`, 'runnerflow-runner', program!, ...args], {
        cwd: dir,
        detached: true,
        stdio: ['ignore', log, log],
        env: {
          ...runnerHostEnvironment(this.hostEnv),
          ...this.config.env,
          RUNNERFLOW_CALLBACK_URL: bootstrap.callbackUrl,
          RUNNERFLOW_INSTANCE_TOKEN: bootstrap.instanceToken,
          RUNNERFLOW_JIT_CONFIG: bootstrap.jitConfig ?? '',
          RUNNERFLOW_INSTANCE_NAME: bootstrap.name,
          // actions/runner reads `--jitconfig` from here too (as ARC passes it): off the command line.
          ...(bootstrap.jitConfig ? { ACTIONS_RUNNER_INPUT_JITCONFIG: bootstrap.jitConfig } : {}),
        },
      });
      child.on('error', () => undefined);
      child.unref();
      pid = child.pid;
    } finally {
      closeSync(log);
    }
    if (pid === undefined) throw new ProviderFaultError(this.name, `cannot start /bin/sh for instance ${bootstrap.name}`);
    const secrets = bootstrapSecrets(bootstrap);
    const record: LocalInstanceRecord = {
      name: bootstrap.name,
      controllerId: ctx.controllerId,
      poolId: bootstrap.poolId || ctx.poolId,
      pid,
      startTicks: processStartTicks(pid),
      startedAt: new Date().toISOString(),
      command: [program!, ...args].map((a) => redact(a, secrets)),
    };
    writeRecord(dir, record);
    return record;
  }

  private toInstance(record: LocalInstanceRecord, dir: string): ProviderInstance {
    // The status is written as the runner ends, a moment before the shell around it
    // exits: once it is there the runner has stopped, whatever the pid says.
    const exitStatus = readExitStatus(dir);
    const running = exitStatus === undefined && isRunning(record.pid, record.startTicks);
    return {
      providerId: record.name,
      name: record.name,
      osType: process.platform === 'win32' ? 'windows' : 'linux',
      osArch: process.arch === 'x64' ? 'amd64' : process.arch,
      osName: process.platform,
      addresses: [{ address: '127.0.0.1', type: 'private' }],
      status: running ? 'running' : 'stopped',
      providerFault: exitStatus !== undefined && exitStatus !== 0 ? `runner exited with status ${exitStatus}` : undefined,
      poolId: record.poolId,
      createdAt: record.startedAt,
    };
  }
}

function readRecord(dir: string): LocalInstanceRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, RECORD_FILE), 'utf8')) as LocalInstanceRecord;
  } catch {
    return undefined;
  }
}

function writeRecord(dir: string, record: LocalInstanceRecord): void {
  const tmp = join(dir, `${RECORD_FILE}.tmp`);
  writeFileSync(tmp, JSON.stringify(record, null, 2));
  renameSync(tmp, join(dir, RECORD_FILE));
}

function readExitStatus(dir: string): number | undefined {
  try {
    const text = readFileSync(join(dir, EXIT_STATUS_FILE), 'utf8').trim();
    // Empty while a shell started before the status was renamed into place is still writing it.
    const value = text === '' ? NaN : Number(text);
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a runner inherits from the worker's environment: only what a process needs to run and to
 * reach the network. Job steps inherit the runner's environment, and the worker's holds its GitHub
 * credentials, cloud keys and the API's tokens; anything else a runner needs goes in the provider's `env`.
 */
const INHERITED = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy']);

export function runnerHostEnvironment(host: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(host)) {
    if (value !== undefined && (INHERITED.has(key) || key.startsWith('LC_'))) env[key] = value;
  }
  return env;
}
