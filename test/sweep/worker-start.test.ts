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
import { connectClient, temporalAddress, uniqueName } from '../support/temporal';
import { CONTROLLER, triggerSweep } from './helpers';

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
    const logged: string[] = [];
    const started = await startWorker({
      loaded: { config, source: 'test', env: {} },
      github: createGitHubRegistry(config, {}),
      instanceTokenKey: 'test-instance-token-key',
      workflowBundlePath: inject('workflowBundlePath'),
      log: (m) => logged.push(m),
    });
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
});
