/**
 * The chaos campaign (see bench/chaos/campaign.ts), on its own Temporal dev
 * server with a persistent SQLite file so that the server restart keeps state.
 *
 *   npx tsx bench/chaos.ts [--jobs 200] [--full] [--seed N] [--minutes M] [--no-machine-kills] [--no-server-restart] [--scale-set [--broker]] [--org | --enterprise] [--workers N] [--apis N] [--looks-asked]
 *
 * --full runs 1,000 lifecycles; --scale-set makes the pool a runner scale set, whose jobs --broker has GitHub's
 * broker assign with no offer to acquire; --org makes it an organisation's pool, whose jobs come from three
 * of its repositories; --enterprise an enterprise's, whose jobs come from two organisations' repositories.
 * --workers and --apis run that many of each (1 by default), killed one at a time. --looks-asked leaves the pools'
 * own looks hourly, as in production, so what ended unreported is found only through the liveness pass's asks. Loopback only; the dev server listens on
 * CHAOS_TEMPORAL_PORT (a free port by default) and is stopped at the end.
 */
import { bundleWorkflows } from '../worker/workflow-bundle';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { devServer, temporalAnswers } from '../devstack/temporal-server';
import { freePort } from '../devstack/free-port';
import { runChaosCampaign } from './chaos/campaign';
import { printChaosReport } from './chaos/report';
import { exitAfter, intArg, quietTemporal, releasedOnInterrupt, runBench, until } from './common';

const ROOT = resolve(import.meta.dirname, '..');
const has = (flag: string): boolean => process.argv.slice(2).includes(`--${flag}`);

runBench('chaos', async () => {
  quietTemporal();
  const lifecycles = has('full') ? 1_000 : intArg('jobs', 200);
  const seed = intArg('seed', Math.floor(Math.random() * 1_000_000_000) + 1);
  const minutes = intArg('minutes', has('full') ? 60 : 20);
  exitAfter((minutes + 3) * 60_000, 'chaos');
  const log = (m: string) => console.log(m);
  log(`chaos campaign${has('broker') ? ' (scale set, broker)' : has('scale-set') ? ' (scale set)' : ''}${has('enterprise') ? ' (enterprise pool)' : has('org') ? ' (organisation pool)' : ''}${intArg('workers', 1) > 1 || intArg('apis', 1) > 1 ? ` (${intArg('workers', 1)} workers, ${intArg('apis', 1)} APIs)` : ''}: seed ${seed} (--seed ${seed} repeats it), ${lifecycles} lifecycles, at most ${minutes} min`);

  const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-chaos-temporal-'));
  const port = String(process.env.CHAOS_TEMPORAL_PORT ?? (await freePort()));
  const cli = execFileSync('bash', [join(ROOT, 'temporal-dev.sh'), 'path'], { encoding: 'utf8' }).trim();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(cli)}:${process.env.PATH ?? ''}`,
    TEMPORAL_STATE_DIR: stateDir,
    TEMPORAL_UI_PORT: 'off',
    TEMPORAL_HTTP_PORT: String(await freePort()),
    TEMPORAL_METRICS_PORT: String(await freePort()),
  };
  const address = `127.0.0.1:${port}`;
  devServer('start', port, 'quiet', env);
  const stopServer = releasedOnInterrupt((): void => {
    devServer('stop', port, 'quiet', env);
    rmSync(stateDir, { recursive: true, force: true });
  });
  try {
    const code = await bundleWorkflows({ logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m: string) => console.error(m) } });
    const bundlePath = join(stateDir, 'workflow-bundle.js');
    writeFileSync(bundlePath, code);
    const report = await runChaosCampaign({
      temporalAddress: address,
      mode: has('scale-set') || has('broker') ? 'scaleSet' : 'webhook',
      scaleSetAssignment: has('broker') ? 'broker' : 'acquire',
      scope: has('enterprise') ? 'enterprise' : has('org') ? 'org' : 'repo',
      lifecycles,
      seed,
      killMachines: !has('no-machine-kills'),
      looksAsked: has('looks-asked'),
      workers: intArg('workers', 1),
      apis: intArg('apis', 1),
      workflowBundlePath: bundlePath,
      timeLimitMs: minutes * 60_000,
      log,
      // As the suite's short campaigns run, on a server they share and cannot restart.
      ...(has('no-server-restart') ? {} : { restartTemporal }),
    });
    printChaosReport(report);
  } finally {
    stopServer();
  }

  async function restartTemporal(downMs: number): Promise<void> {
    devServer('stop', port, 'quiet', env);
    await new Promise((resolve) => setTimeout(resolve, downMs));
    devServer('start', port, 'quiet', env);
    // A server just started on a busy machine may take a few seconds to answer.
    if (!(await until(async () => ((await temporalAnswers(address)) ? true : undefined), 30_000, 500))) throw new Error('Temporal did not come back after the restart');
  }
});
