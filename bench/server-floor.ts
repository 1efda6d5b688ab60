/**
 * What the Temporal server alone needs per runner lifecycle, whatever runnerflow does:
 * the floor under the throughput targets (≥ 50 complete lifecycles/s, ≥ 50 runners/s).
 *
 * Every runner is a workflow (the design fixes it), so each lifecycle costs the server
 * at least a workflow start with its visibility record, the runner's signals (agent
 * online, job started, job completed), a workflow task for each, the search-attribute
 * upserts that keep `RunnerStatus` current (running, then deleted), and the close. This bench runs exactly that
 * (bench/floor/workflows.ts: no activities, no local activities, no pool, no GitHub,
 * no machines) at a fixed offered rate, on the same worker tuning and eager start
 * runnerflow uses, and prints what the server spent per lifecycle. Whatever runnerflow
 * adds comes on top, so `cores / server core-ms` bounds the throughput any
 * runner-per-workflow design reaches on this machine.
 *
 *   npx tsx bench/server-floor.ts [--rate 50] [--seconds 20] [--gap-ms 200] [--job-ms 1000]
 *                                 [--signals 3] [--no-attributes] [--local-activities 0]
 *
 * Each lifecycle: start (eager, with the runner's search attributes and a memo), `--gap-ms`
 * later the agent's `idle`, `--gap-ms` later `jobStarted`, `--job-ms` later `jobCompleted`,
 * then the workflow closes. The gaps keep each signal in a workflow task of its own, as a
 * real runner's are. `--signals 0..3` sends fewer (the workflow closes after the last),
 * `--no-attributes` starts it without search attributes or memo and upserts nothing: the
 * differences price a signal and the visibility records. `--local-activities 1..4` runs local
 * activities that do nothing where a runner runs its own (the create, the report of its job's
 * start, the delete and the report of that): the difference prices a local activity.
 */
import { cpus } from 'node:os';
import { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { completionRate, exitAfter, intArg, ms, percentile, printTable, quietTemporal, runBench, sleep, temporalServer, uniqueName, type Figure } from './common';
import { cpuBetween, cpuSnapshot } from './cpu';
import { WORKER_TUNING } from '../worker/create-worker';
import { workflowBundlerOptions } from '../worker/workflow-bundle';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_STATUS } from '../workflows/search-attributes';
import { floorLifecycle, floorStepSignal, type FloorStep } from './floor/workflows';
import * as floorActivities from './floor/activities';

const LIFECYCLES_TARGET = 50;
const WORKFLOWS_PATH = fileURLToPath(new URL('./floor/workflows.ts', import.meta.url));

async function main(): Promise<void> {
  const rate = intArg('rate', 50);
  const seconds = intArg('seconds', 20);
  const gapMs = intArg('gap-ms', 200);
  const jobMs = intArg('job-ms', 1_000);
  const signals = Math.min(3, intArg('signals', 3, { allowZero: true }));
  const attributes = !process.argv.includes('--no-attributes');
  const localActivities = Math.min(4, intArg('local-activities', 0, { allowZero: true }));
  const total = rate * seconds;
  exitAfter(seconds * 1_000 + 300_000, 'server-floor');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const connection = await NativeConnection.connect({ address: temporal.address });
  // Eager start needs the client on the worker's own connection, as runnerflow's pool activities have it.
  const client = new Client({ connection });
  const taskQueue = uniqueName('floor');
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    activities: floorActivities,
    bundlerOptions: workflowBundlerOptions(false),
    ...WORKER_TUNING,
  });
  const running = worker.run();
  try {
    const shape = `start, ${signals} signal${signals === 1 ? '' : 's'}, ${attributes ? 'search attributes, 2 status upserts' : 'no search attributes'}, ${localActivities > 0 ? `${localActivities} local activit${localActivities === 1 ? 'y' : 'ies'} doing nothing, ` : ''}close; nothing else`;
    console.log(`server-floor: ${total} lifecycles (${shape}) at ${rate}/s for ${seconds} s, signals ${gapMs} ms apart, ${jobMs} ms jobs, on ${temporal.address}`);
    const prefix = uniqueName('floor-runner');
    const lifecycleMs: number[] = [];
    const closedAt: number[] = [];
    let failed = 0;
    let firstError: unknown;
    const lifecycle = async (i: number): Promise<void> => {
      const name = `${prefix}-${i}`;
      const started = Date.now();
      const handle = await client.workflow.start(floorLifecycle, {
        taskQueue,
        workflowId: `floor/${name}`,
        args: [{ signals, upserts: attributes, localActivities }],
        requestEagerStart: true,
        ...(attributes
          ? {
              typedSearchAttributes: new TypedSearchAttributes([
                { key: RUNNER_STATUS, value: 'pending_create' },
                { key: RUNNER_POOL, value: prefix },
                { key: RUNNER_PROVIDER, value: 'floor' },
                { key: RUNNER_NAME, value: name },
                { key: RUNNER_LEAKED, value: false },
              ]),
              memo: { github: { scope: { kind: 'org', org: 'bench' }, credentials: 'bench' }, ephemeral: true, pooled: true },
            }
          : {}),
      });
      const steps: FloorStep['step'][] = ['idle', 'jobStarted', 'jobCompleted'];
      let waited = 0;
      for (const step of steps.slice(0, signals)) {
        const pause = step === 'jobCompleted' ? jobMs : gapMs;
        await sleep(pause);
        waited += pause;
        await handle.signal(floorStepSignal, { step });
      }
      await handle.result();
      closedAt.push(Date.now());
      lifecycleMs.push(Date.now() - started - waited);
    };

    const pids = { 'bench process (worker and client)': process.pid };
    const cpuBefore = cpuSnapshot(pids);
    const began = Date.now();
    const all: Promise<void>[] = [];
    // Open loop: lifecycles begin on schedule whatever the server does, as jobs do.
    for (let i = 0; i < total; i++) {
      const due = began + (i * 1_000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      all.push(
        lifecycle(i).catch((err: unknown) => {
          failed += 1;
          firstError ??= err;
        }),
      );
    }
    const offeredFor = Date.now() - began;
    await Promise.all(all);
    const tookMs = Date.now() - began;
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(pids));
    const completed = total - failed;
    const perLifecycle = (seconds_: number): number => (seconds_ * 1_000) / Math.max(1, completed);
    const serverRow = cpu.find((r) => r.what.startsWith('rest of the machine'));
    const serverMs = perLifecycle(serverRow?.seconds ?? 0);
    const cores = cpus().length;
    const ceiling = serverMs > 0 ? (cores * 1_000) / serverMs : Infinity;
    const throughput = completionRate(closedAt);
    const wholeRow = cpu.find((r) => r.what === 'whole machine');
    const wholeMs = perLifecycle(wholeRow?.seconds ?? 0);

    const figures: Figure[] = [
      { figure: 'lifecycles completed', value: `${completed} of ${total}`, target: `${total}`, met: completed === total },
      { figure: 'offered for / all closed after', value: `${ms(offeredFor)} / ${ms(tookMs)}` },
      { figure: 'complete lifecycles per second (first close → last close)', value: throughput.toFixed(1), target: `≥ ${LIFECYCLES_TARGET}`, met: throughput >= LIFECYCLES_TARGET },
      { figure: 'orchestration time per lifecycle, gaps and job left out (p50 / p99)', value: `${ms(percentile(lifecycleMs, 50))} / ${ms(percentile(lifecycleMs, 99))}` },
      ...cpu.map((row) => ({ figure: `CPU per lifecycle: ${row.what}`, value: `${perLifecycle(row.seconds).toFixed(1)} core-ms` })),
      {
        figure: `lifecycles/s the whole machine could carry at this cost (${cores} cores)`,
        value: wholeMs > 0 ? ((cores * 1_000) / wholeMs).toFixed(1) : 'n/a',
        target: `≥ ${LIFECYCLES_TARGET}`,
        met: wholeMs > 0 && (cores * 1_000) / wholeMs >= LIFECYCLES_TARGET,
      },
      {
        figure: `lifecycles/s the server alone could carry on all ${cores} cores, nothing else running`,
        value: Number.isFinite(ceiling) ? ceiling.toFixed(1) : 'n/a',
        target: `≥ ${LIFECYCLES_TARGET}`,
        met: ceiling >= LIFECYCLES_TARGET,
      },
    ];
    if (failed > 0) console.error(`server-floor: ${failed} lifecycles failed; the first: ${String(firstError)}`);
    printTable(`Server floor: ${rate} lifecycles/s for ${seconds} s (${shape})`, figures);
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    temporal.release();
  }
}

runBench('server-floor', main);
