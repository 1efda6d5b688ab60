/**
 * A provider whose machines are JSON files, so every worker process of a test
 * sees the same machines, and whose faults are planned by the test through
 * `faults.json` while the system runs.
 *
 * Layout of `stateDir`:
 *   instances/<name>.json   one machine each
 *   faults.json             FakeFaultPlans, re-read on every call
 *   attempts.json           attempt counter per operation with a plan (reset by setFault)
 *   calls.jsonl             one FakeCallRecord per call, in order
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ProviderFaultError,
  ProviderNotFoundError,
  type BootstrapInstance,
  type ProviderCallContext,
  type ProviderInstance,
  type ProviderInstanceStatus,
  type ProviderPort,
} from './port';

export type FakeOperation = 'create' | 'delete' | 'get' | 'list';
export const FAKE_OPERATIONS: readonly FakeOperation[] = ['create', 'delete', 'get', 'list'];

/**
 * What goes wrong with one operation.
 * An attempt "triggers" the plan when it is among the first `failTimes` attempts
 * (counted since the plan was set), always with `failForever`, and always when
 * neither is given (so `{ hang: true }` hangs every call).
 * A triggered attempt hangs when `hang` is set, else fails when `failTimes` or
 * `failForever` is set. `delayMs` delays every attempt, triggered or not.
 */
export interface FakeFaultPlan {
  failTimes?: number;
  failForever?: boolean;
  /** Never answers until ctx.signal aborts (or ctx.timeoutMs passes). */
  hang?: boolean;
  delayMs?: number;
  /** The injected error's message (default "injected <op> fault"). */
  message?: string;
  /** The injected failure says no retry will help (as bad credentials or a missing executable do). */
  permanent?: boolean;
  /** A triggered failure comes after the operation took effect: the provider made the machine, then its answer was lost. */
  afterWork?: boolean;
  /**
   * The attempt is not stopped by its caller hanging up: it runs its `delayMs` out and does
   * its work even after `ctx.signal` aborted, as a cloud that already took the request does.
   */
  landsAfterAbort?: boolean;
  /** Only calls for this instance name (or provider id) are affected. */
  instance?: string;
  /**
   * Fraction (0..1) of attempts that fail, and of attempts that hang, picked
   * per attempt by a hash of `seed`, the operation, the instance and the
   * attempt number: a campaign with a fixed seed meets the same faults.
   * Used instead of `failTimes`/`failForever`/`hang`.
   */
  failRate?: number;
  hangRate?: number;
  seed?: number;
}
export type FakeFaultPlans = Partial<Record<FakeOperation, FakeFaultPlan>>;

export type FakeCallOutcome = 'created' | 'existing' | 'deleted' | 'absent' | 'found' | 'not-found' | 'listed' | 'fault' | 'aborted' | 'timeout';

export interface FakeCallRecord {
  op: FakeOperation;
  /** Instance name or id the call was about (absent for list). */
  instance?: string;
  /** Epoch ms when the attempt started. */
  at: number;
  /** Epoch ms when it answered. */
  endedAt: number;
  /** 1-based attempt number of this operation since its plan was set (0: not counted, no plan or one aimed at another instance). */
  attempt: number;
  outcome: FakeCallOutcome;
  controllerId: string;
  poolId?: string;
  pid: number;
  message?: string;
}

/** A fake machine as stored on disk. */
export interface FakeMachine extends Omit<ProviderInstance, 'createdAt'> {
  controllerId: string;
  /** Epoch ms; reported to callers as ProviderInstance.createdAt (ISO). */
  createdAt: number;
  /** Whether the bootstrap carried a JIT config or registration token (never the value). */
  hadCredential: boolean;
  labels: string[];
  image: string;
  flavor: string;
}

export interface FakeProviderOptions {
  name: string;
  stateDir: string;
}

const LOCK_STALE_MS = 10_000;

/** Paths and small synchronous file helpers shared by the provider and its control. */
class FakeState {
  constructor(readonly dir: string) {
    mkdirSync(join(dir, 'instances'), { recursive: true });
  }

  get faultsFile(): string {
    return join(this.dir, 'faults.json');
  }
  get callsFile(): string {
    return join(this.dir, 'calls.jsonl');
  }
  private get attemptsFile(): string {
    return join(this.dir, 'attempts.json');
  }
  machineFile(name: string): string {
    return join(this.dir, 'instances', `${encodeURIComponent(name)}.json`);
  }

  /** A cross-process lock (mkdir is atomic); held only for quick synchronous work. */
  withLock<T>(fn: () => T): T {
    const lock = join(this.dir, '.lock');
    for (let spins = 0; ; spins++) {
      try {
        mkdirSync(lock);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        if (isStale(lock)) rmSync(lock, { recursive: true, force: true });
        else if (spins > 20_000) throw new Error(`fake provider lock ${lock} is held too long`);
        else sleepSync(1);
      }
    }
    try {
      return fn();
    } finally {
      // The lock is an empty directory: one rmdir, not a recursive removal. Another process may
      // already have taken it for stale (as the recursive removal's `force` tolerated).
      try {
        rmdirSync(lock);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  /** Tests may write faults.json by hand, non-atomically: retry a torn read. */
  readFaults(): FakeFaultPlans {
    for (let i = 0; ; i++) {
      try {
        return readJson<FakeFaultPlans>(this.faultsFile) ?? {};
      } catch (err) {
        if (!(err instanceof SyntaxError) || i >= 20) throw err;
        sleepSync(5);
      }
    }
  }
  writeFaults(plans: FakeFaultPlans): void {
    writeJsonAtomic(this.faultsFile, plans);
  }

  readAttempts(): Partial<Record<FakeOperation, number>> {
    return readJson(this.attemptsFile) ?? {};
  }
  writeAttempts(attempts: Partial<Record<FakeOperation, number>>): void {
    writeJsonAtomic(this.attemptsFile, attempts);
  }

  readMachine(name: string): FakeMachine | undefined {
    return readJson<FakeMachine>(this.machineFile(name));
  }
  writeMachine(machine: FakeMachine): void {
    writeJsonAtomic(this.machineFile(machine.name), machine);
  }
  removeMachine(name: string): void {
    rmSync(this.machineFile(name), { force: true });
  }
  /** Machine names from the directory listing alone, without reading a file. */
  machineNames(): string[] {
    return readdirSync(join(this.dir, 'instances'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => decodeURIComponent(f.slice(0, -'.json'.length)));
  }
  machines(): FakeMachine[] {
    const dir = join(this.dir, 'instances');
    return readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => readJson<FakeMachine>(join(dir, f)))
      .filter((m): m is FakeMachine => m !== undefined)
      .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
  }
  /**
   * By provider id or by name. Every provider id is `fake-<name>`, so this is
   * at most two file reads: scanning every machine here made each create (whose
   * first step looks the name up) cost a read of every machine there is, and
   * bringing N machines up cost N² reads.
   */
  findMachine(idOrName: string): FakeMachine | undefined {
    const byId = idOrName.startsWith('fake-') ? this.readMachine(idOrName.slice('fake-'.length)) : undefined;
    if (byId?.providerId === idOrName) return byId;
    return this.readMachine(idOrName);
  }

  appendCall(record: FakeCallRecord): void {
    appendFileSync(this.callsFile, `${JSON.stringify(record)}\n`);
  }
  calls(): FakeCallRecord[] {
    if (!existsSync(this.callsFile)) return [];
    return readFileSync(this.callsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as FakeCallRecord);
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function isStale(path: string): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > LOCK_STALE_MS;
  } catch {
    return false;
  }
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Readers in other processes never see a half-written file. */
function writeJsonAtomic(path: string, value: unknown): void {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2));
  renameSync(tmp, path);
}

function planApplies(plan: FakeFaultPlan | undefined, instance: string | undefined, machine?: FakeMachine): boolean {
  if (!plan) return false;
  if (plan.instance === undefined) return true;
  return plan.instance === instance || (machine !== undefined && (plan.instance === machine.name || plan.instance === machine.providerId));
}

/** FNV-1a over the text, as a fraction in [0, 1). */
function hashFraction(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 2 ** 32;
}

/** What the plan does to this attempt (beyond its delay). */
function faultOf(plan: FakeFaultPlan, op: FakeOperation, instance: string | undefined, attempt: number): 'hang' | 'fail' | undefined {
  if (plan.failRate !== undefined || plan.hangRate !== undefined) {
    const roll = hashFraction(`${plan.seed ?? 0}:${op}:${instance ?? ''}:${attempt}`);
    if (roll < (plan.hangRate ?? 0)) return 'hang';
    return roll < (plan.hangRate ?? 0) + (plan.failRate ?? 0) ? 'fail' : undefined;
  }
  if (!triggers(plan, attempt)) return undefined;
  if (plan.hang) return 'hang';
  return plan.failForever || plan.failTimes !== undefined ? 'fail' : undefined;
}

function triggers(plan: FakeFaultPlan, attempt: number): boolean {
  if (plan.failForever) return true;
  if (plan.failTimes === undefined) return true;
  return attempt <= plan.failTimes;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** Waits `ms` (forever when undefined) unless the signal aborts or the timeout passes first. */
function wait(ms: number | undefined, signal: AbortSignal | undefined, timeoutMs: number | undefined): Promise<'done' | 'timeout'> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const timers: NodeJS.Timeout[] = [];
    const finish = (result: 'done' | 'timeout') => {
      timers.forEach(clearTimeout);
      signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const onAbort = () => {
      timers.forEach(clearTimeout);
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (ms !== undefined) timers.push(setTimeout(() => finish('done'), ms));
    if (timeoutMs !== undefined && (ms === undefined || timeoutMs < ms)) timers.push(setTimeout(() => finish('timeout'), timeoutMs));
    // With neither a duration, a timeout nor a signal this would never settle; keep
    // the event loop alive anyway so a hang stays a hang.
    if (timers.length === 0) timers.push(setInterval(() => undefined, 60_000));
  });
}

export class FakeProvider implements ProviderPort {
  readonly name: string;
  private readonly state: FakeState;

  constructor(options: FakeProviderOptions) {
    this.name = options.name;
    this.state = new FakeState(options.stateDir);
  }

  async createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance> {
    return this.call('create', bootstrap.name, ctx, () => {
      const existing = this.state.readMachine(bootstrap.name);
      if (existing) return { outcome: 'existing', value: toInstance(existing) };
      const machine: FakeMachine = {
        providerId: `fake-${bootstrap.name}`,
        name: bootstrap.name,
        osType: bootstrap.osType,
        osArch: bootstrap.arch,
        osName: 'fake',
        osVersion: '1',
        addresses: [{ address: '127.0.0.1', type: 'private' }],
        status: 'running',
        poolId: bootstrap.poolId || ctx.poolId,
        controllerId: ctx.controllerId,
        createdAt: Date.now(),
        hadCredential: Boolean(bootstrap.jitConfig || bootstrap.registrationToken),
        labels: bootstrap.labels,
        image: bootstrap.image,
        flavor: bootstrap.flavor,
      };
      this.state.writeMachine(machine);
      return { outcome: 'created', value: toInstance(machine) };
    });
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    await this.call('delete', instanceId, ctx, () => {
      const machine = this.state.findMachine(instanceId);
      if (!machine) return { outcome: 'absent', value: undefined };
      this.state.removeMachine(machine.name);
      return { outcome: 'deleted', value: undefined };
    });
  }

  async getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance> {
    const found = await this.call(
      'get',
      instanceId,
      ctx,
      () => {
        const machine = this.state.findMachine(instanceId);
        return machine ? { outcome: 'found', value: toInstance(machine) } : { outcome: 'not-found', value: undefined };
      },
      'read',
    );
    if (!found) throw new ProviderNotFoundError(this.name, instanceId);
    return found;
  }

  async listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    return this.call(
      'list',
      undefined,
      ctx,
      () => ({
        outcome: 'listed',
        value: this.state
          .machines()
          .filter((m) => m.controllerId === ctx.controllerId && (!ctx.poolId || m.poolId === ctx.poolId))
          .map(toInstance),
      }),
      'read',
    );
  }

  /**
   * Runs one attempt: counts it, applies the fault plan, then does the work under
   * the lock and logs the call with its outcome. Reads take no lock: every
   * machine file is replaced whole (written aside, then renamed), so a read sees
   * one version or the other, and the lock's directory calls were most of a
   * lookup's cost.
   */
  private async call<T>(
    op: FakeOperation,
    instance: string | undefined,
    ctx: ProviderCallContext,
    work: () => { outcome: FakeCallOutcome; value: T },
    access: 'write' | 'read' = 'write',
  ): Promise<T> {
    const at = Date.now();
    const plans = this.state.readFaults();
    const plan = plans[op];
    const applies = planApplies(plan, instance, plan?.instance !== undefined && instance ? this.state.findMachine(instance) : undefined);
    // Counted against a plan only: with none there is nothing to count, and a locked write on every
    // call was the largest part of the stand-in's own cost when thousands of machines came up.
    const attempt = !plan
      ? 0
      : this.state.withLock(() => {
          const attempts = this.state.readAttempts();
          const next = (attempts[op] ?? 0) + 1;
          // A plan aimed at one instance counts only that instance's attempts.
          if (applies || !plan.instance) this.state.writeAttempts({ ...attempts, [op]: next });
          return applies || !plan.instance ? next : 0;
        });
    const log = (outcome: FakeCallOutcome, message?: string) =>
      this.state.appendCall({ op, instance, at, endedAt: Date.now(), attempt, outcome, controllerId: ctx.controllerId, poolId: ctx.poolId, pid: process.pid, message });

    try {
      const landsAnyway = plan && applies && plan.landsAfterAbort;
      if (plan && applies && plan.delayMs) {
        if (landsAnyway) await wait(plan.delayMs, undefined, undefined);
        else if ((await wait(plan.delayMs, ctx.signal, ctx.timeoutMs)) === 'timeout') throw this.timeout(op, ctx);
      }
      const fault = plan && applies ? faultOf(plan, op, instance, attempt) : undefined;
      if (fault === 'hang') {
        await wait(undefined, ctx.signal, ctx.timeoutMs);
        throw this.timeout(op, ctx);
      }
      if (fault === 'fail' && plan?.afterWork) {
        const message = plan.message ?? `injected ${op} fault after the ${op} took effect`;
        if (access === 'read') work();
        else this.state.withLock(work);
        throw new ProviderFaultError(this.name, message, message, !plan.permanent);
      }
      if (fault === 'fail') {
        const message = plan?.message ?? `injected ${op} fault`;
        throw new ProviderFaultError(this.name, message, message, !plan?.permanent);
      }
      if (ctx.signal?.aborted) {
        if (landsAnyway) {
          if (access === 'read') work();
          else this.state.withLock(work);
        }
        throw abortReason(ctx.signal);
      }
    } catch (err) {
      const timedOut = err instanceof ProviderFaultError && err.message.includes('timed out');
      log(ctx.signal?.aborted ? 'aborted' : timedOut ? 'timeout' : 'fault', err instanceof Error ? err.message : String(err));
      throw err;
    }
    const { outcome, value } = access === 'read' ? work() : this.state.withLock(work);
    log(outcome);
    return value;
  }

  private timeout(op: FakeOperation, ctx: ProviderCallContext): ProviderFaultError {
    return new ProviderFaultError(this.name, `fake ${op} timed out after ${ctx.timeoutMs} ms`);
  }
}

function toInstance(machine: FakeMachine): ProviderInstance {
  return {
    providerId: machine.providerId,
    name: machine.name,
    osType: machine.osType,
    osArch: machine.osArch,
    osName: machine.osName,
    osVersion: machine.osVersion,
    addresses: machine.addresses,
    status: machine.status,
    providerFault: machine.providerFault,
    poolId: machine.poolId,
    createdAt: new Date(machine.createdAt).toISOString(),
  };
}

/** What tests use to plan faults and look at what the fake provider was asked to do. */
export class FakeProviderControl {
  private readonly state: FakeState;

  constructor(readonly stateDir: string) {
    this.state = new FakeState(stateDir);
  }

  /** Replaces the plan of one operation and restarts its attempt counter. */
  setFault(op: FakeOperation, plan: FakeFaultPlan): void {
    this.state.withLock(() => {
      this.state.writeFaults({ ...this.state.readFaults(), [op]: plan });
      this.state.writeAttempts({ ...this.state.readAttempts(), [op]: 0 });
    });
  }

  /** Removes every plan (one operation's only, when given) and resets the counters. */
  clearFaults(op?: FakeOperation): void {
    this.state.withLock(() => {
      const plans = this.state.readFaults();
      const attempts = this.state.readAttempts();
      for (const o of op ? [op] : FAKE_OPERATIONS) {
        delete plans[o];
        delete attempts[o];
      }
      this.state.writeFaults(plans);
      this.state.writeAttempts(attempts);
    });
  }

  faults(): FakeFaultPlans {
    return this.state.readFaults();
  }

  /** Every call so far, oldest first; only one operation's when given. */
  calls(op?: FakeOperation): FakeCallRecord[] {
    const all = this.state.calls();
    return op ? all.filter((c) => c.op === op) : all;
  }

  /** Attempts of one operation counted against its current plan. */
  attempts(op: FakeOperation): number {
    return this.state.readAttempts()[op] ?? 0;
  }

  instances(): FakeMachine[] {
    return this.state.machines();
  }

  /**
   * How many machines exist whose name starts with `prefix` (a pool's runners
   * do), from the directory listing alone: benches sample this every 100 ms
   * in the process they measure, where reading every machine's file would
   * cost more than what they measure.
   */
  countNamed(prefix: string): number {
    return this.state.machineNames().filter((name) => name.startsWith(prefix)).length;
  }

  instance(name: string): FakeMachine | undefined {
    return this.state.readMachine(name);
  }

  /** How many machines were ever created for this name (an idempotent re-create does not count). */
  createdCount(name: string): number {
    return this.state.calls().filter((c) => c.op === 'create' && c.instance === name && c.outcome === 'created').length;
  }

  /** Makes a machine look like it broke or stopped on its own. */
  setStatus(name: string, status: ProviderInstanceStatus, providerFault?: string): void {
    this.state.withLock(() => {
      const machine = this.state.readMachine(name);
      if (!machine) throw new Error(`fake machine ${name} does not exist`);
      this.state.writeMachine({ ...machine, status, providerFault });
    });
  }

  /** Makes a machine vanish behind the provider's back (as if deleted out of band). */
  removeInstance(name: string): void {
    this.state.withLock(() => this.state.removeMachine(name));
  }

  /** Adds a machine no one asked for (e.g. a leaked one for the orphan sweep). */
  addInstance(machine: Partial<FakeMachine> & { name: string; controllerId: string }): FakeMachine {
    const full: FakeMachine = {
      providerId: `fake-${machine.name}`,
      addresses: [],
      status: 'running',
      createdAt: Date.now(),
      hadCredential: false,
      labels: [],
      image: '',
      flavor: '',
      ...machine,
    };
    this.state.withLock(() => this.state.writeMachine(full));
    return full;
  }
}
