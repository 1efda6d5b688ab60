/**
 * Test helpers around the real Temporal dev server started by global-setup:
 * a client, and workers on unique task queues wired to test doubles.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import type { InstanceActivityDeps } from '../../activities/instance-activities';
import { connectTemporal } from '../../api/temporal/connection';
import { DEFAULT_TIMINGS, type InstanceTimings } from '../../domain/timings';
import type { GitHubPort } from '../../github/port';
import { FakeProvider, FakeProviderControl } from '../../providers/fake';
import type { ProviderPort } from '../../providers/port';
import { createRunnerflowWorker, type RunnerflowWorkerOptions } from '../../worker/create-worker';
import type { InstanceSpec, RunnerInstanceInput } from '../../workflows/messages';
import { sampleInstanceSpec } from '../../devstack/fixtures';
import { GitHubDouble } from './github-double';
import { testInstanceDeps } from './instance-deps';

let counter = 0;
/** Unique per test file and call: workflow ids and task queues never collide across tests. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid.toString(36)}-${Date.now().toString(36)}-${counter}`;
}

/** Production semantics at test speed: every backoff and timeout in milliseconds. */
export const FAST_TIMINGS: InstanceTimings = {
  ...DEFAULT_TIMINGS,
  createAttemptTimeoutMs: 10_000,
  createMaxAttempts: 3,
  createInitialIntervalMs: 100,
  createMaxIntervalMs: 200,
  deleteInitialIntervalMs: 200,
  deleteBackoffCoefficient: 2,
  deleteMaxIntervalMs: 1_000,
  deleteAttemptTimeoutMs: 5_000,
  githubInitialIntervalMs: 100,
  githubMaxIntervalMs: 500,
  githubAttemptTimeoutMs: 5_000,
  forceDeleteAttemptTimeoutMs: 500,
  busyRetryIntervalMs: 300,
  heartbeatTimeoutMs: 2_000,
  poolCreateBackoffInitialMs: 1_000,
  poolCreateBackoffMaxMs: 4_000,
};

export function temporalAddress(): string {
  return inject('temporalAddress');
}

export async function connectClient(): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect({ address: temporalAddress() });
  return { client: new Client({ connection, namespace: 'default' }), connection };
}

export function testSpec(overrides: Partial<InstanceSpec> = {}): InstanceSpec {
  return sampleInstanceSpec(overrides);
}

export function instanceInput(name: string, overrides: Partial<RunnerInstanceInput> = {}, spec: Partial<InstanceSpec> = {}): RunnerInstanceInput {
  return { name, pool: 'test-pool', provider: 'fake', spec: testSpec(spec), timings: FAST_TIMINGS, ...overrides };
}

export interface TestWorker {
  taskQueue: string;
  worker: Worker;
  /** The worker's own connection: a client on it can start workflows eagerly on this worker. */
  connection: NativeConnection;
  fake: FakeProviderControl;
  fakeDir: string;
  github: GitHubDouble;
  stop(): Promise<void>;
}

export interface TestWorkerOptions {
  providers?: Map<string, ProviderPort>;
  github?: GitHubPort;
  activities?: Partial<InstanceActivityDeps>;
  extraActivities?: Record<string, (...args: never[]) => Promise<unknown>>;
  fakeDir?: string;
  /** The fake provider's inline create and delete bound (none by default: every attempt is an activity). */
  fakeInlineMs?: number;
  /** Join an existing task queue (e.g. to take over from a killed worker). */
  taskQueue?: string;
  /** Bundle the workflows from source with `temporal.workflowStackTraces` so set, instead of the run's prebuilt bundle. */
  workflowStackTraces?: boolean;
  /** What the worker takes from its task queue (both by default). */
  roles?: RunnerflowWorkerOptions['roles'];
  /** What the worker says as it starts (how it bundled its workflows). */
  log?: (message: string) => void;
}

let runtimeInstalled = false;
/** Worker logs only warnings and worse, so test output shows what matters. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  // A test file may have installed its own runtime first (to read the worker's logs); that one stays.
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN') });
}

export async function startTestWorker(options: TestWorkerOptions = {}): Promise<TestWorker> {
  quietRuntime();
  const taskQueue = options.taskQueue ?? uniqueName('tq');
  const fakeDir = options.fakeDir ?? mkdtempSync(join(tmpdir(), 'runnerflow-fake-'));
  const github = new GitHubDouble();
  const fake = Object.assign(new FakeProvider({ name: 'fake', stateDir: fakeDir }), options.fakeInlineMs ? { inlineCreateTimeoutMs: options.fakeInlineMs, inlineDeleteTimeoutMs: options.fakeInlineMs } : {});
  const providers = options.providers ?? new Map<string, ProviderPort>([['fake', fake]]);
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const clientConnection = await connectTemporal({ address: temporalAddress() });
  const worker = await createRunnerflowWorker({
    connection,
    clientConnection,
    namespace: 'default',
    taskQueue,
    ...(options.workflowStackTraces === undefined ? { workflowBundlePath: inject('workflowBundlePath') } : { workflowStackTraces: options.workflowStackTraces }),
    shutdownGraceTimeMs: 500,
    activities: { ...testInstanceDeps(providers, { get: () => options.github ?? github }), ...options.activities },
    ...(options.extraActivities ? { extraActivities: options.extraActivities } : {}),
    ...(options.roles ? { roles: options.roles } : {}),
    ...(options.log ? { log: options.log, warn: options.log } : {}),
  });
  const running = worker.run();
  let stopped: Promise<void> | undefined;
  return {
    taskQueue,
    worker,
    connection,
    fake: new FakeProviderControl(fakeDir),
    fakeDir,
    github,
    /** Safe to call again: a test that stops its worker midway leaves the same call to its clean-up. */
    stop() {
      stopped ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        await connection.close();
        await clientConnection.close();
      })();
      return stopped;
    },
  };
}

/**
 * A schedule whose interval is whole hours fires on the hour (a daily one at midnight, UTC), and a
 * test that counts a schedule's runs may straddle one: one made within `marginMs` of the hour is
 * made just after it instead. Tests use daily schedules, so that a slow test that outlasts the
 * margin still meets such a run only near midnight.
 */
export async function awayFromTheHour(marginMs = 60_000): Promise<void> {
  const toTheHour = 3_600_000 - (Date.now() % 3_600_000);
  if (toTheHour < marginMs) await new Promise((r) => setTimeout(r, toTheHour + 1_000));
}

/** Polls until `check` returns a value (not undefined/false), or fails with the last seen value. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface TemporalTestEnv {
  client: Client;
  w: TestWorker;
}

/** A client and a test worker for the whole file, closed after its last test. */
export function useTestWorker(options: TestWorkerOptions = {}): TemporalTestEnv {
  const env = {} as TemporalTestEnv;
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ client: env.client, connection } = await connectClient());
    env.w = await startTestWorker(options);
  });
  afterAll(async () => {
    await env.w?.stop();
    await connection?.close();
  });
  return env;
}

/** A client for a file's tests that make schedules: the schedules named in `created` are deleted after them. */
/** A client for the whole file (for tests that start their own workers), closed after its last test. */
export function useClient(): { client: Client } {
  const env = {} as { client: Client };
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ client: env.client, connection } = await connectClient());
  });
  afterAll(async () => {
    await connection?.close();
  });
  return env;
}

export function useScheduleClient(): { client: Client; created: string[] } {
  const env = { created: [] as string[] } as { client: Client; created: string[] };
  let connection: Connection | undefined;
  beforeAll(async () => {
    ({ client: env.client, connection } = await connectClient());
  });
  afterAll(async () => {
    await Promise.allSettled(env.created.map((id) => env.client.schedule.getHandle(id).delete()));
    await connection?.close();
  });
  return env;
}
