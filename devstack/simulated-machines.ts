/**
 * A provider whose "machines" are runner agents inside the GitHub simulator:
 * machine bookkeeping is the fake provider's, and creating one starts an agent
 * with the instance's JIT config. Hundreds of runners cost almost nothing, so
 * end-to-end tests and benchmarks can run bursts on two cores.
 */
import { FakeProvider, FakeProviderControl } from '../providers/fake';
import type { BootstrapInstance, ProviderCallContext, ProviderInstance, ProviderPort } from '../providers/port';
import { ProviderFaultError } from '../providers/port';
import type { GitHubSimulator } from '../github/simulator/server';

export class SimulatedMachinesProvider implements ProviderPort {
  private readonly machines: FakeProvider;
  private readonly agentByInstance = new Map<string, string>();
  private readonly control: FakeProviderControl;

  constructor(
    readonly name: string,
    stateDir: string,
    private readonly sim: GitHubSimulator,
  ) {
    this.machines = new FakeProvider({ name, stateDir });
    this.control = new FakeProviderControl(stateDir);
  }

  /**
   * Kills a machine behind runnerflow's back (spot reclaim, host crash): its runner goes
   * offline mid-whatever, and the provider then reports it stopped or not at all.
   * A job it was running stays busy at GitHub until `failJobAfterMs`, as on GitHub.
   */
  killMachine(instanceName: string, options: { leaves: 'stopped' | 'gone'; failJobAfterMs?: number }): void {
    const agent = this.agentByInstance.get(instanceName);
    if (agent) this.sim.crashAgent(agent, options.failJobAfterMs !== undefined ? { failJobAfterMs: options.failJobAfterMs } : {});
    if (options.leaves === 'gone') this.control.removeInstance(instanceName);
    else this.control.setStatus(instanceName, 'stopped');
  }

  async createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance> {
    if (!bootstrap.jitConfig) throw new ProviderFaultError(this.name, 'simulated machines need a JIT config (ephemeral pools)', undefined, false);
    const machine = await this.machines.createInstance(bootstrap, ctx);
    if (!this.agentByInstance.has(bootstrap.name)) {
      const agent = await this.sim.startAgent({ jitConfig: bootstrap.jitConfig, callbackUrl: bootstrap.callbackUrl, instanceToken: bootstrap.instanceToken });
      this.agentByInstance.set(bootstrap.name, agent.id);
    }
    return machine;
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    await this.machines.deleteInstance(instanceId, ctx);
    const name = instanceId.replace(/^fake-/, '');
    const agent = this.agentByInstance.get(name);
    if (agent) this.sim.stopAgent(agent);
    this.agentByInstance.delete(name);
  }

  getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance> {
    return this.machines.getInstance(instanceId, ctx);
  }

  listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    return this.machines.listInstances(ctx);
  }
}
