import { describe, expect, inject, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../config/load';
import { createGitHubRegistry } from '../../github/registry';
import { FakeProviderControl } from '../../providers/fake';
import { startWorker } from '../../worker/start';
import { livenessScheduleId } from '../../worker/liveness-schedule';
import { sweepScheduleId } from '../../worker/sweep-schedule';
import { startPool } from '../../api/pool-settings';
import { poolWorkflowId } from '../../workflows/pool-messages';
import { poolSettingsFor } from '../liveness/counterfeit';
import { connectClient, eventually, temporalAddress, uniqueName } from '../support/temporal';
import { CONTROLLER, triggerSweep } from './helpers';

/** A worker of this config, with what it logs. */
async function startLoggingWorker(config: ReturnType<typeof parseConfig>) {
  const logged: string[] = [];
  const started = await startWorker({
    loaded: { config, source: 'test', env: {} },
    github: createGitHubRegistry(config, {}),
    instanceTokenKey: 'test-instance-token-key',
    workflowBundlePath: inject('workflowBundlePath'),
    log: (m) => logged.push(m),
  });
  return { started, logged };
}

describe('startWorker', () => {
  it('creates the sweep schedules and runs the sweep activity', async () => {
    const provider = uniqueName('start-provider');
    const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-sweep-'));
    const config = parseConfig({
      controllerId: CONTROLLER,
      temporal: { address: temporalAddress(), namespace: 'default', taskQueue: uniqueName('tq') },
      providers: [{ type: 'fake', name: provider, stateDir }],
      // Daily: its own run comes only at midnight, so the run the test checks is the one it triggers.
      sweep: { interval: '24h', gracePeriod: '1h' },
    });
    const orphan = new FakeProviderControl(stateDir).addInstance({ name: uniqueName('orphan'), controllerId: CONTROLLER, createdAt: Date.now() - 2 * 3_600_000 });
    const { started, logged } = await startLoggingWorker(config);
    const { client, connection } = await connectClient();
    const schedule = client.schedule.getHandle(sweepScheduleId(provider));
    const liveness = [livenessScheduleId(provider, 'machines'), livenessScheduleId(provider, 'github')];
    try {
      expect(logged).toContain(`sweep schedule sweep/${provider}: created`);
      expect(logged).toEqual(expect.arrayContaining([`liveness schedule liveness/${provider}: created`, `liveness schedule liveness/${provider}/github: created`]));
      const report = await triggerSweep(client, schedule);
      expect(report).toEqual({
        provider,
        listed: 1,
        owned: 0,
        deleted: [{ name: orphan.name, providerId: orphan.providerId, reason: 'untracked' }],
        skipped: [],
        failed: [],
        // No pool uses this provider: no GitHub scope to look at.
        github: { scopes: 0, ours: 0, owned: 0, removed: [], skipped: [], failed: [], requeued: [] },
      });
    } finally {
      await schedule.delete();
      await Promise.all(liveness.map((id) => client.schedule.getHandle(id).delete()));
      await started.stop();
      await connection.close();
    }
  });

  it('says at start when its pools outnumber the workflows it keeps in memory, and what to set', async () => {
    const taskQueue = uniqueName('tq-cache');
    const provider = uniqueName('cache-provider');
    const config = parseConfig({
      controllerId: CONTROLLER,
      temporal: { address: temporalAddress(), namespace: 'default', taskQueue, workflowCacheSize: 2 },
      providers: [{ type: 'fake', name: provider, stateDir: mkdtempSync(join(tmpdir(), 'runnerflow-cache-')) }],
      sweep: { enabled: false },
      liveness: { enabled: false },
    });
    const { client, connection } = await connectClient();
    const pools = ['cache-a', 'cache-b', 'cache-c'].map((tag) => poolSettingsFor(provider, tag));
    for (const settings of pools) await startPool(client, taskQueue, config, settings);
    // Visibility lists a workflow a moment after it starts.
    await eventually(async () => {
      let listed = 0;
      for await (const _ of client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` })) listed += 1;
      return listed >= pools.length ? true : undefined;
    }, 20_000, 'the pools listed');
    const { started, logged } = await startLoggingWorker(config);
    try {
      // The configured size is the one the worker runs with.
      expect(started.worker.options.maxCachedWorkflows).toBe(2);
      expect(logged).toContain(
        '3 pools and 0 runners at work, but a worker keeps at most 2 workflows in memory (temporal.workflowCacheSize): pools it cannot keep are replayed from their history whenever they wake (a job, a report from a runner, their own audit) or are asked a question; set temporal.workflowCacheSize to at least 50 (1 – 2 MB of worker memory each) and restart the workers, or spread the pools over more workers',
      );
    } finally {
      await started.stop();
      await Promise.all(pools.map((settings) => client.workflow.getHandle(poolWorkflowId(settings.name)).terminate('test done')));
      await connection.close();
    }
  });
});
