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
 *
 * A real machine boots its runner by itself once it exists, whether or not the
 * create call that made it returned. So does this one: the bootstrap is written
 * (like a VM's user data) before the machine is recorded, and a machine found
 * without its agent boots it on the next look. Otherwise a create cut short
 * between the two steps left a machine that a retried create reused and that
 * never ran a runner.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeProvider, FakeProviderControl } from '../providers/fake';
import type { BootstrapInstance, ProviderCallContext, ProviderInstance, ProviderPort } from '../providers/port';
import { ProviderFaultError } from '../providers/port';
import { AgentError, type StartAgentInput } from '../github/simulator/agents';

/** What a machine's runner is started with (a VM's user data). */
type PendingBoot = Pick<StartAgentInput, 'jitConfig' | 'callbackUrl' | 'instanceToken'>;

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
    const boot: PendingBoot = { jitConfig: bootstrap.jitConfig, callbackUrl: bootstrap.callbackUrl, instanceToken: bootstrap.instanceToken };
    writeFileSync(this.bootFile(bootstrap.name), JSON.stringify(boot), { mode: 0o600 });
    const machine = await this.machines.createInstance(bootstrap, ctx);
    await this.boot(bootstrap.name);
    return machine;
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    await this.machines.deleteInstance(instanceId, ctx);
    const name = instanceId.replace(/^fake-/, '');
    const agent = this.agentOf(name);
    if (agent) await this.sim.stopAgent(agent);
    rmSync(this.agentFile(name), { force: true });
    rmSync(this.bootFile(name), { force: true });
  }

  async getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance> {
    const machine = await this.machines.getInstance(instanceId, ctx);
    if (machine.status === 'running') await this.boot(machine.name);
    return machine;
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

  /** Starts the machine's runner agent from its written bootstrap, once; a machine already booted is left alone. */
  private async boot(name: string): Promise<void> {
    if (this.agentOf(name) !== undefined) return;
    let boot: PendingBoot;
    try {
      boot = JSON.parse(readFileSync(this.bootFile(name), 'utf8')) as PendingBoot;
    } catch {
      return;
    }
    const agentId = await this.startAgent(name, boot);
    writeFileSync(this.agentFile(name), agentId);
    rmSync(this.bootFile(name), { force: true });
  }

  /** An earlier attempt (perhaps in a worker that died) may have started the agent already: adopt it. */
  private async startAgent(name: string, boot: PendingBoot): Promise<string> {
    try {
      const agent = await this.sim.startAgent(boot);
      return agent.id;
    } catch (err) {
      if (!(err instanceof AgentError) || err.status !== 409) throw err;
      const running = (await this.sim.agents()).find((a) => a.runnerName === name && a.state !== 'done');
      if (!running) throw err;
      return running.id;
    }
  }

  private agentFile(name: string): string {
    return join(this.agentsDir, encodeURIComponent(name));
  }

  private bootFile(name: string): string {
    return join(this.agentsDir, `${encodeURIComponent(name)}.boot`);
  }
}
