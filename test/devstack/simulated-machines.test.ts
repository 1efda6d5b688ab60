/**
 * The benches' and end-to-end tests' machines must behave like real ones where
 * runnerflow relies on it: a machine that exists boots its runner, even when
 * the create call that made it never returned.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimulatedMachinesProvider, type SimulatorAgents } from '../../devstack/simulated-machines';
import type { StartAgentInput } from '../../github/simulator/agents';
import { bootstrapFor } from '../providers/bootstrap';

/** Agents in memory; the first `failures` starts fail as a worker dying mid-create would leave them. */
function agentsDouble(failures: number): SimulatorAgents & { started: StartAgentInput[] } {
  let left = failures;
  const started: StartAgentInput[] = [];
  return {
    started,
    async startAgent(input) {
      if (left-- > 0) throw new Error('worker died before the agent started');
      started.push(input);
      return { id: `agent-${started.length}` };
    },
    stopAgent: () => true,
    crashAgent: () => true,
    agents: () => [],
  };
}

const ctx = { controllerId: 'test', poolId: 'pool' };

describe('a simulated machine', () => {
  it('boots its runner on the next look when its create was cut short after the machine was recorded', async () => {
    const sim = agentsDouble(1);
    const machines = new SimulatedMachinesProvider('simulated', mkdtempSync(join(tmpdir(), 'sim-machines-')), sim);
    const bootstrap = bootstrapFor('cut-short', 'pool', { jitConfig: 'jit-1', jitConfigEnabled: true });
    await expect(machines.createInstance(bootstrap, ctx)).rejects.toThrow('worker died');
    expect(sim.started).toEqual([]);

    // What a retried create does first: look for the machine an earlier attempt made.
    const found = await machines.getInstance('cut-short', ctx);
    expect(found.status).toBe('running');
    expect(sim.started).toEqual([{ jitConfig: 'jit-1', callbackUrl: bootstrap.callbackUrl, instanceToken: bootstrap.instanceToken }]);
    expect(machines.agentOf('cut-short')).toBe('agent-1');

    // Booted once: later looks start nothing more.
    await machines.getInstance('cut-short', ctx);
    expect(sim.started).toHaveLength(1);
  });

  it('boots once when the create completes', async () => {
    const sim = agentsDouble(0);
    const machines = new SimulatedMachinesProvider('simulated', mkdtempSync(join(tmpdir(), 'sim-machines-')), sim);
    await machines.createInstance(bootstrapFor('whole', 'pool', { jitConfig: 'jit-2', jitConfigEnabled: true }), ctx);
    await machines.getInstance('whole', ctx);
    expect(sim.started.map((s) => s.jitConfig)).toEqual(['jit-2']);
  });
});
