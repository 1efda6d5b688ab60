/**
 * Webhook intake under load. Target: p99 ≤ 50 ms and no 5xx at 500
 * deliveries/s for 10 s, matching and unmatched jobs alike (a big matrix
 * build arrives as one burst; GitHub gives up on a delivery after 10 s).
 *
 * GitHub's own `workflow_job` `queued` example (@octokit/webhooks-examples),
 * each copy with a fresh job id and delivery id, signed with the webhook
 * secret and sent open-loop from another thread to the full stack's HTTP API.
 * Half the jobs carry the labels and repository of a bench pool, half labels
 * no pool has. The pool's `maxRunners` defaults to 0, so what is measured is
 * the intake alone; `--max-runners` lets the pool make runners meanwhile.
 * Afterwards it checks every job reached its place (pool queue or unmatched record).
 *
 *   npx tsx bench/webhook-intake.ts [--rate 500] [--seconds 10] [--max-runners 0] [--processes] [--relay-after 30ms] [--pace 20ms] [--warm-up 3] [--no-keep-alive] [--twin]
 *
 * The table also gives the p99 of each second of the burst, which shows where
 * in it the tail lies.
 *
 * By default the burst meets a stack that has just started, as a burst right
 * after a deploy would. --warm-up N first sends N seconds of deliveries at
 * 50/s (not counted; its p99 is printed on its own line) and then waits 2 s,
 * so the burst meets a stack that has served traffic and is quiet again.
 *
 * By default the API and the worker share one process, as `npm start` runs them;
 * --processes gives each a process of its own, as a larger deployment does.
 * --relay-after sets `api.intakeRelayAfter` (0 turns the relay off), --pace
 * `api.intakePace` (least time between two signals to one pool).
 *
 * --twin adds a second pool with the bench pool's labels, repository and priority: every
 * matching job is then a tie, which routing breaks by the pools' free capacity.
 *
 * The sender keeps its connections alive, as a reverse proxy with upstream keep-alive
 * does; --no-keep-alive opens one per delivery, as one without it (nginx's default) does.
 */
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { knownJobsQuery, poolWorkflowId, unmatchedJobsQuery, unmatchedJobsWorkflowId } from '../workflows/pool-messages';
import { JOB_RELAY_WORKFLOW } from '../workflows/relay-messages';
import { exitAfter, intArg, stringArg, ms, percentile, printTable, quietTemporal, runBench, temporalServer, until, type Figure } from './common';
import { cpuBetween, cpuSnapshot } from './cpu';
import { openLoop, type OpenLoopRequest } from './open-loop';
import { createPool, removePool, startBenchStack, startProcessBenchStack, stopBenchStack } from './stack';

const P99_TARGET_MS = 50;
const GITHUB_TIMEOUT_MS = 10_000;
const WARM_UP_RATE = 50;
const WARM_UP_QUIET_MS = 2_000;

/** GitHub's published `workflow_job` `queued` example (api.github.com flavour). */
function officialQueuedExample(): Record<string, unknown> & { workflow_job: Record<string, unknown>; repository: Record<string, unknown> } {
  const root = dirname(createRequire(import.meta.url).resolve('@octokit/webhooks-examples/package.json'));
  const events = JSON.parse(readFileSync(join(root, 'api.github.com', 'index.json'), 'utf8')) as { name: string; examples: Record<string, unknown>[] }[];
  const example = events.find((e) => e.name === 'workflow_job')?.examples.find((e) => e.action === 'queued');
  if (!example) throw new Error('@octokit/webhooks-examples has no workflow_job queued example');
  return example as ReturnType<typeof officialQueuedExample>;
}

async function main(): Promise<void> {
  const rate = intArg('rate', 500);
  const seconds = intArg('seconds', 10);
  const maxRunners = intArg('max-runners', 0, { allowZero: true });
  const warmUpSeconds = intArg('warm-up', 0, { allowZero: true });
  exitAfter(240_000 + (seconds + warmUpSeconds) * 2_000, 'webhook-intake');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const processes = process.argv.includes('--processes');
  const keepAlive = !process.argv.includes('--no-keep-alive');
  const relayAfter = stringArg('relay-after');
  const pace = stringArg('pace');
  const api = { ...(relayAfter !== undefined ? { intakeRelayAfter: relayAfter } : {}), ...(pace !== undefined ? { intakePace: pace } : {}) };
  const stack = processes ? await startProcessBenchStack(temporal.address, 1_000, 8, { api }) : await startBenchStack(temporal.address, 1_000, 8, { api });
  try {
    const pool = await createPool(stack, maxRunners);
    const pools = process.argv.includes('--twin') ? [pool, await createPool(stack, maxRunners, pool)] : [pool];
    const example = officialQueuedExample();
    const total = rate * seconds;
    const firstId = 7_000_000_000 + Math.floor(Math.random() * 1_000_000_000);
    const matchingIds = new Set<number>();
    const unmatchedIds = new Set<number>();
    /** The example as job `id`: every other one for the bench pool, the rest for no pool. */
    const delivery = (id: number, matching: boolean): OpenLoopRequest => {
      const payload = {
        ...example,
        workflow_job: {
          ...example.workflow_job,
          id,
          run_id: id + 1,
          created_at: new Date().toISOString(),
          ...(matching ? { labels: pool.labels } : { labels: ['self-hosted', `no-such-pool-${pool.name}`] }),
        },
        repository: { ...example.repository, full_name: matching ? pool.repository : 'octo-org/elsewhere' },
      };
      return { headers: { 'x-github-event': 'workflow_job', 'x-github-delivery': randomUUID() }, body: JSON.stringify(payload) };
    };
    const requests: OpenLoopRequest[] = Array.from({ length: total }, (_, i) => {
      const id = firstId + i;
      const matching = i % 2 === 0;
      (matching ? matchingIds : unmatchedIds).add(id);
      return delivery(id, matching);
    });
    console.log(`webhook-intake: ${total} signed queued deliveries at ${rate}/s for ${seconds} s (half matching pool${pools.length > 1 ? 's' : ''} ${pools.map((p) => p.name).join(' and ')}, max ${maxRunners} runners each, ${keepAlive ? "connections kept alive" : "a connection per delivery"}) on ${temporal.address}`);
    const apiUrl = 'processes' in stack ? stack.apis[0]!.url! : stack.api.url;
    const webhookSecret = stack.webhookSecret;
    const pids = {
      'bench process (the sender, and in one process the API and worker)': process.pid,
      ...('processes' in stack ? { 'worker process': stack.workers[0]?.child.pid, 'API process': stack.apis[0]?.child.pid } : {}),
    };
    const url = `${apiUrl}/webhooks/github`;
    const warmUpRequests = Array.from({ length: WARM_UP_RATE * warmUpSeconds }, (_, i) => delivery(firstId + total + i, i % 2 === 0));
    const warmUp = warmUpSeconds > 0 ? await openLoop({ url, secret: webhookSecret, rate: WARM_UP_RATE, seconds: warmUpSeconds, timeoutMs: GITHUB_TIMEOUT_MS, requests: warmUpRequests, keepAlive }) : undefined;
    // A burst comes after a quiet spell: what the warm-up set going (a relay, a pool's tasks) settles first.
    if (warmUp) await new Promise((resolve) => setTimeout(resolve, WARM_UP_QUIET_MS));
    // In one process the API shares its thread with the worker's activities and the simulator: a busy event loop delays every answer.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const cpuBefore = cpuSnapshot(pids);
    const result = await openLoop({ url, secret: webhookSecret, rate, seconds, timeoutMs: GITHUB_TIMEOUT_MS, requests, keepAlive });

    loopDelay.disable();
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(pids));
    // Handed over durably means: the pool counts every matching job and the unmatched record got the others.
    // Asked by id: the pool's view lists only its oldest queued jobs.
    const perPool = () => Promise.all(pools.map(async (p) => (await stack.client.workflow.getHandle(poolWorkflowId(p.name)).query(knownJobsQuery, { jobIds: [...matchingIds] })).length));
    const pending = async () => (await perPool()).reduce((a, b) => a + b, 0);
    const reachedPool = (await until(async () => {
      const n = await pending();
      return n >= matchingIds.size ? n : undefined;
    }, 60_000, 500)) ?? (await pending());
    const taskQueue = 'processes' in stack ? stack.taskQueue : stack.loaded.config.temporal.taskQueue;
    const unmatchedHandle = stack.client.workflow.getHandle(unmatchedJobsWorkflowId(taskQueue));
    // Which target was slow: the pool, or the record of jobs no pool matches.
    const relays = { pool: 0, unmatched: 0 };
    const openRelays: string[] = [];
    for await (const relay of stack.client.workflow.list({ query: `WorkflowType = '${JOB_RELAY_WORKFLOW}' AND TaskQueue = '${taskQueue}'` })) {
      relays[pools.some((p) => relay.workflowId.startsWith(`jobs/relay/${poolWorkflowId(p.name)}/`)) ? 'pool' : 'unmatched'] += 1;
      if (relay.status.name === 'RUNNING') openRelays.push(relay.workflowId);
    }
    const unmatchedSeen = (await unmatchedHandle.query(unmatchedJobsQuery).catch(() => [])).filter((j) => unmatchedIds.has(j.jobId)).length;
    const split = pools.length > 1 ? (await perPool()).join(' / ') : undefined;
    for (const p of pools) await removePool(stack, p);
    await unmatchedHandle.terminate('bench cleanup').catch(() => undefined);
    // Every job has reached its place by now; a relay would end on its own only after idling, with a worker still running.
    await Promise.all(openRelays.map((id) => stack.client.workflow.getHandle(id).terminate('bench cleanup').catch(() => undefined)));

    // A delivery GitHub gave up on counts as slower than any answer.
    const lat = [...result.latenciesMs, ...Array.from({ length: result.timeouts }, () => Number.POSITIVE_INFINITY)];
    const over = (n: number) => (Number.isFinite(n) ? ms(n) : `> ${GITHUB_TIMEOUT_MS} ms`);
    const server5xx = Object.entries(result.statuses).filter(([s]) => s.startsWith('5')).reduce((a, [, n]) => a + n, 0);
    const p99 = percentile(lat, 99);
    const figures: Figure[] = [
      ...(warmUp ? [{ figure: `warm-up before the burst (not counted): ${warmUp.sent} at ${WARM_UP_RATE}/s, p99`, value: ms(percentile(warmUp.latenciesMs, 99)) }] : []),
      { figure: 'deliveries sent', value: `${result.sent} in ${ms(result.elapsedMs)}` },
      { figure: 'answers by status', value: Object.entries(result.statuses).map(([s, n]) => `${s}: ${n}`).join(', ') },
      { figure: 'latency p50', value: over(percentile(lat, 50)) },
      { figure: 'latency p99', value: over(p99), target: `≤ ${P99_TARGET_MS} ms`, met: lat.length > 0 && p99 <= P99_TARGET_MS },
      { figure: 'latency max', value: over(Math.max(...lat)) },
      // Where in the burst the tail lies: the first seconds, or spread over all of them.
      { figure: 'latency p99 by second sent (ms)', value: p99BySecond(result.latenciesMs, result.sentAtMs, seconds) },
      {
        figure: processes ? 'bench process event loop delay p50 / p99 / max' : 'API event loop delay p50 / p99 / max',
        value: `${ms(loopDelay.percentile(50) / 1e6)} / ${ms(loopDelay.percentile(99) / 1e6)} / ${ms(loopDelay.max / 1e6)}`,
      },
      { figure: '5xx answers', value: String(server5xx), target: '0', met: server5xx === 0 },
      { figure: `no answer within ${GITHUB_TIMEOUT_MS / 1000} s`, value: String(result.timeouts), target: '0', met: result.timeouts === 0 },
      { figure: pools.length > 1 ? 'matching jobs the two pools count' : 'matching jobs the pool counts', value: `${reachedPool}/${matchingIds.size}`, target: 'all', met: reachedPool === matchingIds.size },
      ...(split ? [{ figure: 'matching jobs each pool took (ties broken by free capacity)', value: split }] : []),
      { figure: 'relays started (a target slow to take jobs): for the pool / the unmatched record', value: `${relays.pool} / ${relays.unmatched}` },
      ...cpu
        .filter(({ what }) => !what.includes(': '))
        .map(({ what, seconds }) => ({ figure: `CPU while sending: ${what}`, value: `${(seconds / (result.elapsedMs / 1000)).toFixed(2)} cores` })),
      // The unmatched record keeps only the most recent jobs (bounded), so this is informative.
      { figure: 'unmatched jobs in the (bounded) record', value: `${unmatchedSeen}/${unmatchedIds.size}` },
    ];
    printTable(`Webhook intake: ${rate} deliveries/s for ${seconds} s (GitHub's queued example, signed${processes ? '; worker and API in their own processes' : ''})`, figures);
  } finally {
    if ('processes' in stack) await stack.stop();
    else await stopBenchStack(stack);
    temporal.release();
  }
}

function p99BySecond(latenciesMs: number[], sentAtMs: number[], seconds: number): string {
  const bySecond = Array.from({ length: seconds }, () => [] as number[]);
  latenciesMs.forEach((latency, i) => bySecond[Math.min(seconds - 1, Math.floor(sentAtMs[i]! / 1000))]!.push(latency));
  return bySecond.map((values) => (values.length > 0 ? Math.round(percentile(values, 99)).toLocaleString('en-US') : '–')).join(' · ');
}

runBench('webhook-intake', main);
