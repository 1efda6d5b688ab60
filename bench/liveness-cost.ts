/**
 * Target: liveness costs a flat number of provider calls per interval, not one per runner.
 *
 * For each fleet size N (default 100, 1,000 and 5,000) the bench makes N running
 * `runnerInstance` workflows as visibility sees them (started on a task queue no
 * worker polls, with the search attributes and memo a real instance has), N
 * machines at an in-memory provider that counts its calls, and N registered
 * runners at the GitHub simulator (driven through the real Octokit client). 1 % of
 * the machines are stopped and another 1 % of the runners go offline. Then one
 * machine pass and one GitHub pass of the real `livenessCheck` workflow run on a
 * worker with the liveness activities, and the calls each pass made are counted.
 *
 *   npx tsx bench/liveness-cost.ts [--sizes 100,1000,5000]
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { TypedSearchAttributes } from '@temporalio/common';
import { createLivenessActivities, type LivenessArgs, type LivenessReport } from '../activities/liveness-activities';
import { sampleInstanceSpec } from '../devstack/fixtures';
import { DEFAULT_TIMINGS } from '../domain/timings';
import { OctokitGitHub } from '../github/octokit-github';
import type { GitHubScope } from '../github/port';
import { startGitHubSimulator, type GitHubSimulator } from '../github/simulator/server';
import type { ProviderCallContext, ProviderInstance, ProviderPort } from '../providers/port';
import { ProviderNotFoundError } from '../providers/port';
import { WORKFLOWS_PATH, workflowBundlerOptions } from '../worker/workflow-bundle';
import { instanceStartOptions } from '../workflows/instance-options';
import { livenessCheck } from '../workflows/liveness-check';
import { RUNNER_STATUS } from '../workflows/search-attributes';
import { exitAfter, ms, printTable, quietTemporal, runBench, temporalServer, uniqueName, until, type Figure } from './common';

const RUNNERS_PER_PAGE = 100;
const PARALLEL = 100;

/** Machines in memory; counts every call so the bench can show what a pass costs. */
class CountingProvider implements ProviderPort {
  readonly machines = new Map<string, ProviderInstance>();
  readonly calls = { list: 0, get: 0 };
  constructor(readonly name: string) {}
  async createInstance(): Promise<ProviderInstance> {
    throw new Error('not used by the bench');
  }
  async deleteInstance(): Promise<void> {}
  async getInstance(id: string, _ctx: ProviderCallContext): Promise<ProviderInstance> {
    this.calls.get += 1;
    const found = this.machines.get(id);
    if (!found) throw new ProviderNotFoundError(this.name, id);
    return found;
  }
  async listInstances(): Promise<ProviderInstance[]> {
    this.calls.list += 1;
    return [...this.machines.values()];
  }
}

async function inBatches<T>(items: T[], work: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += PARALLEL) await Promise.all(items.slice(i, i + PARALLEL).map(work));
}

function sizesArg(): number[] {
  const raw = process.argv.find((a, i, all) => all[i - 1] === '--sizes') ?? process.argv.find((a) => a.startsWith('--sizes='))?.slice(8);
  const sizes = (raw ?? '100,1000,5000').split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`--sizes wants positive integers, got "${raw}"`);
  return sizes;
}

interface Fleet {
  provider: CountingProvider;
  scope: GitHubScope;
  ids: string[];
  dead: { machines: number; runners: number };
}

/** N instances as visibility lists them, N machines, N registered runners (online); 1 % of each side dead. */
async function makeFleet(n: number, client: Client, idleQueue: string, github: OctokitGitHub, sim: GitHubSimulator): Promise<Fleet> {
  const provider = new CountingProvider(uniqueName('bench-liveness'));
  const scope: GitHubScope = { kind: 'repo', owner: 'bench', repo: provider.name };
  const names = Array.from({ length: n }, (_v, i) => `${provider.name}-${i.toString(16).padStart(10, '0')}`);
  const spec = sampleInstanceSpec({ github: { credentials: 'bench', scope } });
  await inBatches(names, async (name) => {
    const options = instanceStartOptions({ name, pool: 'bench', provider: provider.name, spec, timings: DEFAULT_TIMINGS });
    const attributes = options.typedSearchAttributes.updateCopy([{ key: RUNNER_STATUS, value: 'running' }]);
    await client.workflow.start('runnerInstance', { ...options, taskQueue: idleQueue, typedSearchAttributes: new TypedSearchAttributes(attributes.getAll()) });
    provider.machines.set(name, { providerId: name, name, addresses: [], status: 'running' });
    const credential = await github.createRunnerCredential({ scope, name, labels: ['self-hosted', 'bench'], runnerGroupId: 1, workFolder: '_work', jit: true });
    if (credential.kind === 'jit') await sim.startAgent({ jitConfig: credential.encodedJitConfig });
  });
  const deadCount = Math.max(1, Math.floor(n / 100));
  for (const name of names.slice(0, deadCount)) provider.machines.set(name, { providerId: name, name, addresses: [], status: 'stopped' });
  const offline = new Set(names.slice(deadCount, 2 * deadCount));
  for (const agent of sim.agents()) if (offline.has(agent.runnerName)) sim.crashAgent(agent.id);
  return { provider, scope, ids: names.map((name) => `runner/${name}`), dead: { machines: deadCount, runners: deadCount } };
}

async function listedRunning(client: Client, provider: string): Promise<number> {
  let count = 0;
  for await (const _info of client.workflow.list({ query: `WorkflowType = 'runnerInstance' AND ExecutionStatus = 'Running' AND RunnerProvider = '${provider}' AND RunnerStatus = 'running'`, pageSize: 1000 })) count += 1;
  return count;
}

async function pass(client: Client, taskQueue: string, args: LivenessArgs): Promise<{ report: LivenessReport; tookMs: number }> {
  const started = Date.now();
  const report = await client.workflow.execute(livenessCheck, { taskQueue, workflowId: uniqueName(`bench-liveness/${args.check}`), args: [args] });
  return { report, tookMs: Date.now() - started };
}

async function main(): Promise<void> {
  const sizes = sizesArg();
  const total = sizes.reduce((a, b) => a + b, 0);
  exitAfter(180_000 + total * 300, 'liveness-cost');
  quietTemporal();
  const temporal = await temporalServer(console.log);
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: 'default' });
  const sim = await startGitHubSimulator({ rateLimit: 1_000_000, onError: () => undefined });
  const github = new OctokitGitHub({ credentialsName: 'bench', apiUrl: sim.url, auth: { type: 'pat', token: 'ghp_bench' } });
  const providers = new Map<string, ProviderPort>();
  const taskQueue = uniqueName('bench-liveness-tq');
  const idleQueue = uniqueName('bench-liveness-idle');
  const workerConnection = await NativeConnection.connect({ address: temporal.address });
  const worker = await Worker.create({
    connection: workerConnection,
    namespace: 'default',
    taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    bundlerOptions: workflowBundlerOptions(false),
    activities: createLivenessActivities({ controllerId: 'bench', providers, github: { get: () => github }, client, namespace: 'default' }),
  });
  const running = worker.run();
  const started: string[] = [];
  const figures: Figure[] = [];
  try {
    console.log(`liveness-cost: fleets of ${sizes.join(', ')} runners on ${temporal.address}`);
    for (const n of sizes) {
      const fleet = await makeFleet(n, client, idleQueue, github, sim);
      started.push(...fleet.ids);
      providers.set(fleet.provider.name, fleet.provider);
      const listed = await until(async () => ((await listedRunning(client, fleet.provider.name)) === n ? true : undefined), 120_000, 500);
      if (!listed) throw new Error(`visibility did not list ${n} running instances in time`);

      const before = { ...fleet.provider.calls };
      const machines = await pass(client, taskQueue, { provider: fleet.provider.name, check: 'machines' });
      const listsBefore = sim.stats().callsByOperation['list-runners'] ?? 0;
      const gh = await pass(client, taskQueue, { provider: fleet.provider.name, check: 'github' });
      const ghLists = (sim.stats().callsByOperation['list-runners'] ?? 0) - listsBefore;
      const pages = Math.ceil(n / RUNNERS_PER_PAGE);

      const providerLists = fleet.provider.calls.list - before.list;
      const providerGets = fleet.provider.calls.get - before.get;
      figures.push(
        { figure: `N=${n}: provider ListInstances per machine pass`, value: String(providerLists), target: '1', met: providerLists === 1 },
        { figure: `N=${n}: provider GetInstance per machine pass`, value: String(providerGets), target: '0', met: providerGets === 0 },
        { figure: `N=${n}: signals, machine pass (stopped machines)`, value: String(machines.report.signalled.length), target: String(fleet.dead.machines), met: machines.report.signalled.length === fleet.dead.machines },
        { figure: `N=${n}: GitHub list-runners calls per GitHub pass (1 scope)`, value: String(ghLists), target: `${pages} (one listing, ${RUNNERS_PER_PAGE} per page)`, met: ghLists === pages },
        {
          figure: `N=${n}: signals, GitHub pass (offline runners)`,
          value: String(gh.report.signalled.length),
          target: String(fleet.dead.runners),
          // The stopped machines' runners are still online at GitHub: only the crashed agents read offline.
          met: gh.report.signalled.length === fleet.dead.runners,
        },
        { figure: `N=${n}: machine pass duration`, value: ms(machines.tookMs) },
        { figure: `N=${n}: GitHub pass duration`, value: ms(gh.tookMs) },
      );
    }
    const perSecond = (calls: number, intervalMs: number) => (calls / (intervalMs / 1000)).toFixed(3);
    const largest = sizes[sizes.length - 1]!;
    figures.push({
      figure: `N=${largest}: provider calls/s at the default 60 s interval`,
      value: perSecond(1, 60_000),
      target: `flat; per-instance polling would be ${perSecond(largest, 60_000)}`,
    });
    printTable('liveness-cost: calls per pass, by fleet size', figures);
  } finally {
    await inBatches(started, (id) => client.workflow.getHandle(id).terminate('bench done').catch(() => undefined));
    worker.shutdown();
    await running;
    await workerConnection.close();
    await sim.close();
    await connection.close();
    temporal.release();
  }
}

runBench('liveness-cost', main);
