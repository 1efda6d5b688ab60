/**
 * A standalone worker (worker/main.ts) serves runnerflow's metrics on
 * RUNNERFLOW_METRICS_LISTEN, the Temporal SDK's own on RUNNERFLOW_SDK_METRICS_LISTEN,
 * and writes the SDK's log lines as JSON through the process logger.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../support/global-setup';
import { scrape } from '../support/prometheus-text';
import { eventually, uniqueName } from '../support/temporal';

let child: ChildProcess | undefined;
afterAll(async () => {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child!.once('exit', r));
  child.kill('SIGTERM');
  await exited;
});

describe('standalone worker telemetry', () => {
  it('serves runnerflow and Temporal SDK metrics and logs SDK lines as JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runnerflow-worker-telemetry-'));
    const configPath = join(dir, 'config.yaml');
    writeFileSync(
      configPath,
      [
        `controllerId: ${uniqueName('ctl')}`,
        'api: { instanceTokenSecret: { env: WORKER_TEST_TOKEN_SECRET } }',
        `providers: [{ type: fake, name: fake, stateDir: ${join(dir, 'machines')} }]`,
        'sweep: { enabled: false }',
      ].join('\n'),
    );
    const [metricsPort, sdkPort] = [await freePort(), await freePort()];
    let stderr = '';
    child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../../worker/main.ts')], {
      env: {
        ...process.env,
        RUNNERFLOW_CONFIG: configPath,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        RUNNERFLOW_TASK_QUEUE: uniqueName('tq-telemetry'),
        WORKER_TEST_TOKEN_SECRET: 'worker-telemetry-secret-0123456789',
        RUNNERFLOW_METRICS_LISTEN: `127.0.0.1:${metricsPort}`,
        RUNNERFLOW_SDK_METRICS_LISTEN: `127.0.0.1:${sdkPort}`,
        RUNNERFLOW_LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));

    const ours = await eventually(() => scrape(`http://127.0.0.1:${metricsPort}/metrics`), 90_000, 'the worker /metrics');
    expect(ours.has('runnerflow_runner_create_seconds')).toBe(true);
    expect(ours.has('runnerflow_sweep_runs_total')).toBe(true);

    // The SDK's exporter answers once the worker polls; its names carry the temporal_ prefix.
    const sdk = await eventually(async () => {
      const families = await scrape(`http://127.0.0.1:${sdkPort}/metrics`);
      return [...families.keys()].some((n) => n.startsWith('temporal_')) ? families : undefined;
    }, 90_000, 'SDK metrics');
    const names = [...sdk.keys()];
    expect(names.some((n) => /^temporal_(worker_task_slots_available|num_pollers|request)/.test(n)), names.join(', ')).toBe(true);

    await eventually(() => stderr.includes('Worker state changed'), 30_000, 'an SDK log line');
    const sdkLine = stderr.split('\n').find((l) => l.includes('Worker state changed'))!;
    expect(JSON.parse(sdkLine)).toMatchObject({ component: 'temporal-sdk', level: 'info', message: 'Worker state changed' });
  }, 180_000);
});
