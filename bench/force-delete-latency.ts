/**
 * Target: a forceDelete closes the runner workflow within 100 ms (p99) of the
 * signal, even when the provider hangs, and the machine is still deleted once
 * the provider answers again (GARM's promise).
 *
 * Each run: a runnerInstance with the fake provider reaches `running`, every
 * provider delete of it is made to hang, a graceful delete is signalled and,
 * once its delete activity hangs at the provider (and `--force-after` later),
 * forceDelete; we measure signal → closed.
 * Production timings for the forced path (the forced attempt's bound). After
 * the runs the provider recovers: every machine must then be deleted and no
 * running workflow left marked RunnerLeaked. For that part alone the delete
 * retries are capped at 5 s (instead of 5 minutes), so the bench ends in time.
 *
 *   npx tsx bench/force-delete-latency.ts [--runs 50] [--bound 50] [--force-after 200]
 */
import { Client, type WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleInstanceSpec } from '../devstack/fixtures';
import { DEFAULT_TIMINGS } from '../domain/timings';
import type { GitHubPort } from '../github/port';
import { FakeProvider, FakeProviderControl } from '../providers/fake';
import { createRunnerflowWorker } from '../worker/create-worker';
import { connectTemporal } from '../api/temporal/connection';
import { ensureSearchAttributes } from '../worker/search-attributes';
import { instanceStartOptions } from '../workflows/instance-options';
import { deleteSignal, forceDeleteSignal, stateQuery, type RunnerInstanceInput } from '../workflows/messages';
import { runnerInstance } from '../workflows/runner-instance';
import { runnerPool } from '../workflows/runner-pool';
import { poolStateQuery, poolWorkflowId } from '../workflows/pool-messages';
import { poolSettingsSchema } from '../domain/pool';
import { exitAfter, intArg, ms, percentile, printTable, quietTemporal, runBench, temporalServer, uniqueName, until } from './common';
import { eventMs } from './job-path';

const TARGET_MS = 100;
const RECOVERY_TIMEOUT_MS = 60_000;
/** `--bound 25` sets the forced attempt's bound (`timings.forceDeleteAttemptTimeout`), the production default otherwise. */
const BENCH_TIMINGS = {
  ...DEFAULT_TIMINGS,
  deleteAttemptTimeoutMs: 2_000,
  deleteMaxIntervalMs: 5_000,
  forceDeleteAttemptTimeoutMs: intArg('bound', DEFAULT_TIMINGS.forceDeleteAttemptTimeoutMs),
};
const RUN_TIMEOUT_MS = 30_000;
/**
 * `--force-after 0` forces the delete as soon as the graceful one reaches the provider, within
 * the forced attempt's bound, so the bounded attempt is made; by default the operator waits a
 * moment, as one does before forcing, and the machine is handed over without it.
 */
const FORCE_AFTER_MS = intArg('force-after', 200, { allowZero: true });

/** GitHub that always answers at once: the bench is about the provider hanging, not GitHub. */
const instantGitHub: GitHubPort = {
  createRunnerCredential: async (req) => ({ kind: 'jit', runnerId: 1, encodedJitConfig: Buffer.from(req.name).toString('base64') }),
  removeRunner: async () => 'removed',
  findRunnerByName: async () => undefined,
  listRunners: async () => [],
  listQueuedRuns: async () => [],
  listRecentlyPushedRepositories: async () => [],
  listOrgRepositoriesPage: async () => ({ repositories: [], last: true }),
  listQueuedJobsOfRun: async () => [],
  getJobStatus: async () => undefined,
  listRunnerDownloads: async () => [],
  rateLimit: async () => ({ limit: 5_000, remaining: 5_000, resetAt: new Date(Date.now() + 3_600_000).toISOString() }),
};

/** A real pool workflow that hears every runner's reports, as in production; it starts no runners of its own. */
const POOL_NAME = uniqueName('bench-force-pool').toLowerCase().slice(0, 40);

function input(name: string): RunnerInstanceInput {
  return {
    name,
    pool: POOL_NAME,
    notifyPool: true,
    provider: 'fake',
    timings: BENCH_TIMINGS,
    spec: sampleInstanceSpec({ github: { credentials: 'default', scope: { kind: 'repo', owner: 'bench', repo: 'force-delete' } }, bootstrapTimeoutMs: 10 * 60_000 }),
  };
}

interface Sample {
  /** Signal sent → handle.result() returned (what a client waiting on the workflow sees). */
  result: number;
  /** Signal sent → close time recorded by the server (describe()). */
  closed: number;
  /** forceDelete signal event → close, both server timestamps. */
  server: number;
  /** Signal event → the first workflow task after it started (queueing and dispatch). */
  toTask: number;
  /** That task, started → completed or failed (the forced step runs inside it). */
  firstTask: number;
  /** The server refused that task (an event arrived while it ran), so it ran again. */
  retried: boolean;
  /** What arrived while the refused task ran. */
  raced: string[];
}

async function oneRun(client: Client, taskQueue: string, fake: FakeProviderControl): Promise<Sample> {
  const name = uniqueName('bench-force');
  const handle: WorkflowHandle<typeof runnerInstance> = await client.workflow.start(runnerInstance, { taskQueue, ...instanceStartOptions(input(name)) });
  try {
    const running = await until(async () => ((await handle.query(stateQuery)).status === 'running' ? true : undefined), RUN_TIMEOUT_MS, 25);
    if (!running) throw new Error(`${name} never reached running`);
    // Every delete hangs, this machine's and the earlier runs' clean-ups alike, until the provider recovers at the end.
    fake.setFault('delete', { hang: true });
    await handle.signal(deleteSignal, { reason: 'bench: graceful delete that will hang' });
    // This machine's own delete attempt has started (the provider's counters also count earlier runs' clean-ups).
    const deleteStarted = async () => {
      const { raw } = await handle.describe();
      const pending = raw.pendingActivities?.find((a) => a.activityType?.name === 'deleteInstance');
      return pending?.state === proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED ? true : undefined;
    };
    if (!(await until(deleteStarted, RUN_TIMEOUT_MS, 25))) throw new Error(`${name}: the graceful delete never reached the provider`);
    // The operator forces the delete once they see it hang.
    if (FORCE_AFTER_MS > 0) await new Promise((resolve) => setTimeout(resolve, FORCE_AFTER_MS));

    const sentAt = Date.now();
    await handle.signal(forceDeleteSignal, { reason: 'bench' });
    const final = await Promise.race([handle.result(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${name} did not close`)), RUN_TIMEOUT_MS))]);
    const resultAt = Date.now();
    if (!final.forced || !final.leaked) throw new Error(`${name} closed without a forced, leaked delete: ${JSON.stringify(final)}`);

    const closeTime = (await handle.describe()).closeTime;
    if (!closeTime) throw new Error(`${name} has no close time`);
    const events = (await handle.fetchHistory()).events ?? [];
    const signalIndex = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === forceDeleteSignal.name);
    const signalledAt = signalIndex >= 0 ? eventMs(events[signalIndex]!) : NaN;
    const after = events.slice(signalIndex + 1);
    const startedIndex = after.findIndex((e) => e.workflowTaskStartedEventAttributes);
    const endIndex = after.findIndex((e, i) => i > startedIndex && (e.workflowTaskCompletedEventAttributes || e.workflowTaskFailedEventAttributes || e.workflowTaskTimedOutEventAttributes));
    const started = after[startedIndex];
    const ended = after[endIndex];
    const retried = Boolean(ended?.workflowTaskFailedEventAttributes);
    const raced = retried
      ? after
          // The events that raced it are written after the refusal, before the task runs again.
          .slice(endIndex + 1, endIndex + 1 + after.slice(endIndex + 1).findIndex((e) => e.workflowTaskScheduledEventAttributes))
          .map((e) => Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? 'unknown')
          .map((k) => k.replace(/EventAttributes$/, ''))
      : [];
    return {
      result: resultAt - sentAt,
      closed: closeTime.getTime() - sentAt,
      server: closeTime.getTime() - signalledAt,
      toTask: (started ? eventMs(started) : NaN) - signalledAt,
      firstTask: started && ended ? eventMs(ended) - eventMs(started) : NaN,
      retried,
      raced,
    };
  } catch (err) {
    await handle.terminate('bench run failed').catch(() => undefined);
    throw err;
  }
}

async function main(): Promise<void> {
  const runs = intArg('runs', 50);
  exitAfter(120_000 + RECOVERY_TIMEOUT_MS + runs * RUN_TIMEOUT_MS, 'force-delete-latency');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-bench-fake-'));
  const connection = await connectTemporal({ address: temporal.address });
  const client = new Client({ connection, namespace: 'default' });
  const workerConnection = await NativeConnection.connect({ address: temporal.address });
  try {
    await ensureSearchAttributes(connection, 'default');
    const taskQueue = uniqueName('bench-force-tq');
    const worker = await createRunnerflowWorker({
      connection: workerConnection,
      clientConnection: connection,
      namespace: 'default',
      taskQueue,
      // Hanging graceful deletes are still running when the bench ends; they need not finish.
      shutdownGraceTimeMs: 1_000,
      activities: {
        controllerId: uniqueName('bench-ctl'),
        providers: new Map([['fake', new FakeProvider({ name: 'fake', stateDir: fakeDir })]]),
        github: { get: () => instantGitHub },
        callbackUrl: 'http://127.0.0.1:9/api/v1/callbacks/status',
        metadataUrl: 'http://127.0.0.1:9/api/v1/metadata',
        mintInstanceToken: async (claims) => `bench-token-${claims.instance}`,
      },
    });
    const fake = new FakeProviderControl(fakeDir);
    const settings = poolSettingsSchema.parse({
      name: POOL_NAME,
      github: { scope: { kind: 'repo', owner: 'bench', repo: 'force-delete' } },
      labels: ['self-hosted', 'bench'],
      provider: 'fake',
      maxRunners: 0,
    });
    const pool = await client.workflow.start(runnerPool, { taskQueue, workflowId: poolWorkflowId(POOL_NAME), args: [{ settings, timings: BENCH_TIMINGS }] });
    const samples: Sample[] = [];
    let failures = 0;
    let leakedWhileHanging = 0;
    let machinesLeft = -1;
    let stillLeaked = -1;
    let poolStillCounts = -1;
    await worker.runUntil(async () => {
      // The first run pays for cold caches and connections; it is not counted.
      console.log(`force-delete-latency: 1 warm-up run + ${runs} measured runs on ${temporal.address}`);
      await oneRun(client, taskQueue, fake);
      for (let i = 0; i < runs; i++) {
        try {
          samples.push(await oneRun(client, taskQueue, fake));
        } catch (err) {
          failures += 1;
          console.error(`run ${i + 1}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      // Counted while the provider still hangs (a clean-up that succeeds clears its mark), and
      // given a moment for visibility to show the last run's clean-up.
      const leakedQuery = `RunnerLeaked = true AND ExecutionStatus = 'Running' AND RunnerPool = '${POOL_NAME}'`;
      const countLeaked = async () => (await client.workflow.count(leakedQuery)).count;
      leakedWhileHanging = (await until(async () => ((await countLeaked()) >= runs + 1 ? runs + 1 : undefined), 5_000, 250)) ?? (await countLeaked());
      // The provider answers again: GARM's promise is that every machine is now deleted.
      fake.clearFaults('delete');
      const mine = () => fake.instances().filter((m) => m.name.startsWith('bench-force-'));
      const gone = await until(() => (mine().length === 0 ? true : undefined), RECOVERY_TIMEOUT_MS, 500);
      machinesLeft = mine().length;
      stillLeaked = gone ? ((await until(async () => ((await client.workflow.count(leakedQuery)).count === 0 ? 0 : undefined), 10_000, 500)) ?? -1) : -1;
      poolStillCounts = (await pool.query(poolStateQuery)).runners.length;
      await pool.terminate('bench done');
    });
    const stat = (pick: (s: Sample) => number) => samples.map(pick);
    const rows = (label: string, values: number[]) => [
      { figure: `${label} p50`, value: ms(percentile(values, 50)) },
      { figure: `${label} p99`, value: ms(percentile(values, 99)), target: `≤ ${TARGET_MS} ms`, met: values.length > 0 && percentile(values, 99) <= TARGET_MS },
      { figure: `${label} max`, value: ms(Math.max(...values)) },
    ];
    printTable(`forceDelete with a hanging provider: signal → workflow closed (${samples.length} runs, forced attempt bound ${BENCH_TIMINGS.forceDeleteAttemptTimeoutMs} ms, forced ${FORCE_AFTER_MS} ms after the delete hung)`, [
      ...rows('signal sent → result() returned', stat((s) => s.result)),
      ...rows('signal sent → closeTime (describe)', stat((s) => s.closed)),
      ...rows('signal event → close (server clock)', stat((s) => s.server)),
      { figure: 'signal event → its workflow task started, p50 / max', value: `${ms(percentile(stat((s) => s.toTask), 50))} / ${ms(Math.max(...stat((s) => s.toTask)))}` },
      { figure: 'that task, started → ended, p50 / max', value: `${ms(percentile(stat((s) => s.firstTask), 50))} / ${ms(Math.max(...stat((s) => s.firstTask)))}` },
      { figure: 'runs whose task the server refused (an event raced it)', value: `${samples.filter((s) => s.retried).length}: ${[...new Set(samples.flatMap((s) => s.raced))].join(', ') || '–'}` },
      { figure: 'close of those runs, p50 / max', value: samples.some((s) => s.retried) ? `${ms(percentile(samples.filter((s) => s.retried).map((s) => s.server), 50))} / ${ms(Math.max(...samples.filter((s) => s.retried).map((s) => s.server)))}` : '–' },
      { figure: 'runs that failed', value: String(failures), target: '0', met: failures === 0 },
      { figure: 'running workflows marked RunnerLeaked while the provider hung', value: String(leakedWhileHanging), target: `${runs + 1} (every machine findable)`, met: leakedWhileHanging === runs + 1 },
      { figure: `machines left ${RECOVERY_TIMEOUT_MS / 1000} s after the provider recovered`, value: String(machinesLeft), target: '0', met: machinesLeft === 0 },
      { figure: 'running workflows still marked RunnerLeaked after that', value: String(stillLeaked), target: '0', met: stillLeaked === 0 },
      { figure: 'runners the pool still counts (it heard every forced delete)', value: String(poolStillCounts), target: '0', met: poolStillCounts === 0 },
    ]);
  } finally {
    await workerConnection.close();
    await connection.close();
    rmSync(fakeDir, { recursive: true, force: true });
    temporal.release();
  }
}

runBench('force-delete-latency', main);
