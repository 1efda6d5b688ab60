/**
 * A provider whose "machines" are runner agents inside the GitHub simulator:
 * machine bookkeeping is the fake provider's, and creating one starts an agent
 * with the instance's JIT config. Hundreds of runners cost almost nothing, so
 * end-to-end tests and benchmarks can run bursts on two cores.
 */
import { FakeProvider } from '../providers/fake';
import type { BootstrapInstance, ProviderCallContext, ProviderInstance, ProviderPort } from '../providers/port';
import { ProviderFaultError } from '../providers/port';
import type { GitHubSimulator } from '../github/simulator/server';

export class SimulatedMachinesProvider implements ProviderPort {
  private readonly machines: FakeProvider;
  private readonly agentByInstance = new Map<string, string>();

  constructor(
    readonly name: string,
    stateDir: string,
    private readonly sim: GitHubSimulator,
  ) {
    this.machines = new FakeProvider({ name, stateDir });
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
