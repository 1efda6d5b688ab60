/**
 * A provider whose "machines" are runner agents inside the GitHub simulator:
 * machine bookkeeping is the fake provider's, and creating one starts an agent
 * with the instance's JIT config. Hundreds of runners cost almost nothing, so
 * end-to-end tests and benchmarks can run bursts on two cores.
 *
 * Everything it knows lives in its state directory (the machines, and which
 * agent runs on which machine), and it reaches the simulator either in-process
 * or over the simulator's `/_sim` endpoints; so several worker processes can
 * share one set of machines, and a worker killed mid-create leaves nothing a
 * later attempt in another process cannot find.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeProvider, FakeProviderControl } from '../providers/fake';
import type { BootstrapInstance, ProviderCallContext, ProviderInstance, ProviderPort } from '../providers/port';
import { ProviderFaultError } from '../providers/port';
import { AgentError, type StartAgentInput } from '../github/simulator/agents';

/** The part of the simulator the machines need: its runner agents. */
export interface SimulatorAgents {
  startAgent(input: StartAgentInput): Promise<{ id: string }>;
  stopAgent(id: string): boolean | Promise<boolean>;
  /** The agent's machine died silently (runner offline; its job kept busy until `failJobAfterMs`). */
  crashAgent(id: string, options?: { failJobAfterMs?: number }): boolean | Promise<boolean>;
  agents(): { id: string; runnerName: string; state: string }[] | Promise<{ id: string; runnerName: string; state: string }[]>;
}

/** The simulator's agents over its `/_sim` control endpoints (from another process). */
export function simulatorAgentsOverHttp(controlUrl: string): SimulatorAgents {
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${controlUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  return {
    async startAgent(input) {
      const res = await call('POST', '/agents', input);
      if (res.status !== 201) throw new AgentError(res.status, `simulator refused the agent (${res.status}): ${JSON.stringify(res.body)}`);
      return res.body as { id: string };
    },
    async stopAgent(id) {
      return (await call('DELETE', `/agents/${encodeURIComponent(id)}`)).status === 204;
    },
    async crashAgent(id, options = {}) {
      return (await call('POST', `/agents/${encodeURIComponent(id)}/crash`, options)).status === 200;
    },
    async agents() {
      return (await call('GET', '/agents')).body as { id: string; runnerName: string; state: string }[];
    },
  };
}

export class SimulatedMachinesProvider implements ProviderPort {
  private readonly machines: FakeProvider;
  private readonly agentsDir: string;
  private readonly control: FakeProviderControl;

  constructor(
    readonly name: string,
    stateDir: string,
    private readonly sim: SimulatorAgents,
  ) {
    this.machines = new FakeProvider({ name, stateDir });
    this.agentsDir = join(stateDir, 'agents');
    mkdirSync(this.agentsDir, { recursive: true });
    this.control = new FakeProviderControl(stateDir);
  }

  /**
   * Kills a machine behind runnerflow's back (spot reclaim, host crash): its runner goes
   * offline mid-whatever, and the provider then reports it stopped or not at all.
   * A job it was running stays busy at GitHub until `failJobAfterMs`, as on GitHub.
   */
  killMachine(instanceName: string, options: { leaves: 'stopped' | 'gone'; failJobAfterMs?: number }): void {
    const agent = this.agentOf(instanceName);
    const crashed = agent ? this.sim.crashAgent(agent, options.failJobAfterMs !== undefined ? { failJobAfterMs: options.failJobAfterMs } : {}) : undefined;
    // Over HTTP the crash lands a moment later; an agent already gone is no error.
    if (crashed instanceof Promise) crashed.catch(() => undefined);
    if (options.leaves === 'gone') this.control.removeInstance(instanceName);
    else this.control.setStatus(instanceName, 'stopped');
  }

  async createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance> {
    if (!bootstrap.jitConfig) throw new ProviderFaultError(this.name, 'simulated machines need a JIT config (ephemeral pools)', undefined, false);
    const machine = await this.machines.createInstance(bootstrap, ctx);
    if (this.agentOf(bootstrap.name) === undefined) {
      const agentId = await this.startAgent(bootstrap);
      writeFileSync(this.agentFile(bootstrap.name), agentId);
    }
    return machine;
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    await this.machines.deleteInstance(instanceId, ctx);
    const name = instanceId.replace(/^fake-/, '');
    const agent = this.agentOf(name);
    if (agent) await this.sim.stopAgent(agent);
    rmSync(this.agentFile(name), { force: true });
  }

  getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance> {
    return this.machines.getInstance(instanceId, ctx);
  }

  listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    return this.machines.listInstances(ctx);
  }

  /** The agent running on a machine, when one was started. */
  agentOf(name: string): string | undefined {
    try {
      return readFileSync(this.agentFile(name), 'utf8') || undefined;
    } catch {
      return undefined;
    }
  }

  /** An earlier attempt (perhaps in a worker that died) may have started the agent already: adopt it. */
  private async startAgent(bootstrap: BootstrapInstance): Promise<string> {
    try {
      const agent = await this.sim.startAgent({ jitConfig: bootstrap.jitConfig!, callbackUrl: bootstrap.callbackUrl, instanceToken: bootstrap.instanceToken });
      return agent.id;
    } catch (err) {
      if (!(err instanceof AgentError) || err.status !== 409) throw err;
      const running = (await this.sim.agents()).find((a) => a.runnerName === bootstrap.name && a.state !== 'done');
      if (!running) throw err;
      return running.id;
    }
  }

  private agentFile(name: string): string {
    return join(this.agentsDir, encodeURIComponent(name));
  }
}
