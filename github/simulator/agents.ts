/**
 * Simulated runner agents (what `run.sh --jitconfig` would be) and GitHub's job
 * assignment. An agent brings its runner online, reports `idle` to the
 * instance's callback URL, takes one matching queued job at a time, and an
 * ephemeral runner is unregistered once its job completes, as on GitHub.
 */
import { randomUUID } from 'node:crypto';
import { decodeJitConfig } from './jit-config';
import type { SimJob, SimRunner, SimState } from './sim-state';
import type { WebhookSender } from './webhook-sender';
import { workflowJobPayload } from './workflow-job-payload';

/** Status callback attempts and the growing pause between them (GARM's bootstrap: curl --retry 5). */
const CALLBACK_ATTEMPTS = 5;
const CALLBACK_RETRY_MS = 1_000;

export type AgentState = 'idle' | 'busy' | 'done';

export interface SimAgent {
  id: string;
  runnerId: number;
  runnerName: string;
  state: AgentState;
  /** Why the agent ended: its ephemeral job finished, its runner was removed, or it was stopped. */
  endReason?: 'job_completed' | 'runner_removed' | 'stopped' | 'crashed';
  callbackUrl?: string;
  instanceToken?: string;
}

export interface StartAgentInput {
  jitConfig: string;
  callbackUrl?: string;
  instanceToken?: string;
}

export class AgentError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface SimJobEvents {
  started(job: SimJob, runner: SimRunner): void;
  completed(job: SimJob, runner: SimRunner | undefined, result: string): void;
}

export class SimAgents {
  /** Told when a job starts or finishes (the Actions service turns them into scale-set messages). */
  jobEvents?: SimJobEvents;
  private readonly agents = new Map<string, SimAgent>();
  private readonly waiters = new Map<string, (() => void)[]>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly state: SimState,
    private readonly webhooks: WebhookSender,
    private readonly onError: (message: string) => void,
  ) {}

  list(): SimAgent[] {
    return [...this.agents.values()].map((a) => ({ ...a, instanceToken: undefined }));
  }

  get(id: string): SimAgent | undefined {
    return this.agents.get(id);
  }

  async start(input: StartAgentInput): Promise<SimAgent> {
    const settings = decodeJitConfig(input.jitConfig);
    if (!settings) throw new AgentError(400, 'not a JIT config minted by this simulator');
    const runner = this.state.runners.get(settings.runnerId);
    if (!runner || runner.jitSecret !== settings.secret) throw new AgentError(404, `runner ${settings.runnerName} is not registered (removed, or a stale JIT config)`);
    if ([...this.agents.values()].some((a) => a.runnerId === runner.id && a.state !== 'done')) {
      throw new AgentError(409, `runner ${runner.name} already has a running agent`);
    }
    const agent: SimAgent = {
      id: randomUUID(),
      runnerId: runner.id,
      runnerName: runner.name,
      state: 'idle',
      callbackUrl: input.callbackUrl,
      instanceToken: input.instanceToken,
    };
    this.agents.set(agent.id, agent);
    runner.status = 'online';
    runner.os = 'Linux';
    // As a real bootstrap does (GARM's starts the runner's service, then calls home), the
    // runner listens for jobs while its `idle` report is on its way: the report's answer
    // does not hold up the runner's first job.
    this.dispatch();
    void this.reportIdle(agent);
    return agent;
  }

  /** Resolves when the agent is done, or after `timeoutMs`. */
  async waitUntilDone(id: string, timeoutMs: number): Promise<AgentState | undefined> {
    const agent = this.agents.get(id);
    if (!agent || agent.state === 'done') return agent?.state;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const list = this.waiters.get(id) ?? [];
      list.push(done);
      this.waiters.set(id, list);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
    });
    return this.agents.get(id)?.state;
  }

  /** The agent process went away: its runner goes offline; a job it ran ends cancelled. */
  stop(id: string): boolean {
    const agent = this.agents.get(id);
    if (!agent) return false;
    // Already ended (its job done, its runner removed, its machine crashed): nothing is left to stop.
    if (agent.state === 'done') return true;
    const runner = this.state.runners.get(agent.runnerId);
    if (runner) {
      runner.status = 'offline';
      const job = runner.jobId !== undefined ? this.state.jobs.get(runner.jobId) : undefined;
      if (job && job.status === 'in_progress') this.complete(job, runner, 'cancelled');
    }
    this.end(agent, 'stopped');
    return true;
  }

  /**
   * The machine under the agent died without a word: the runner goes offline but GitHub
   * still calls it busy with its job, as GitHub does until it gives the job up (about ten
   * minutes on github.com; `failJobAfterMs` here). Then the job fails, with its
   * completed webhook, and the runner is no longer busy; it stays registered, offline.
   */
  crash(id: string, options: { failJobAfterMs?: number } = {}): boolean {
    const agent = this.agents.get(id);
    if (!agent || agent.state === 'done') return false;
    const runner = this.state.runners.get(agent.runnerId);
    this.end(agent, 'crashed');
    if (!runner) return true;
    runner.status = 'offline';
    const job = runner.jobId !== undefined ? this.state.jobs.get(runner.jobId) : undefined;
    if (job && job.status === 'in_progress') {
      // The job's own completion timer must not finish it: nothing runs it any more.
      job.lost = true;
      if (options.failJobAfterMs !== undefined) {
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          this.giveUp(job, runner);
        }, options.failJobAfterMs);
        this.timers.add(timer);
      }
    }
    return true;
  }

  /** A runner was deleted through the API: its idle agent exits, as the real one does. */
  runnerRemoved(runnerId: number): void {
    for (const agent of this.agents.values()) if (agent.runnerId === runnerId && agent.state !== 'done') this.end(agent, 'runner_removed');
  }

  /** Hands queued jobs to idle agents whose runner matches, oldest job first. */
  dispatch(): void {
    if (this.closed) return;
    // Called on every event: with thousands of jobs and agents, scanning all of them for each
    // job would make the simulator, not the system under test, what a bench measures.
    const idle = [...this.agents.values()].filter((a) => {
      const runner = this.state.runners.get(a.runnerId);
      return a.state === 'idle' && runner !== undefined && !runner.busy;
    });
    if (idle.length === 0) return;
    for (const job of this.state.queuedJobs()) {
      const at = idle.findIndex((a) => this.state.canRun(this.state.runners.get(a.runnerId) as SimRunner, job));
      if (at < 0) continue;
      const [agent] = idle.splice(at, 1);
      this.begin(job, this.state.runners.get(agent!.runnerId) as SimRunner, agent!);
      if (idle.length === 0) return;
    }
  }

  /** GitHub cancels a queued job: it completes without ever having a runner. */
  cancelQueued(job: SimJob): void {
    job.status = 'completed';
    job.conclusion = 'cancelled';
    job.completedAt = new Date().toISOString();
    this.webhooks.send('workflow_job', workflowJobPayload('completed', job));
    this.jobEvents?.completed(job, undefined, 'canceled');
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const agent of this.agents.values()) if (agent.state !== 'done') this.end(agent, 'stopped');
  }

  private begin(job: SimJob, runner: SimRunner, agent: SimAgent): void {
    agent.state = 'busy';
    runner.busy = true;
    runner.jobId = job.id;
    job.status = 'in_progress';
    job.startedAt = new Date().toISOString();
    job.runnerId = runner.id;
    job.runnerName = runner.name;
    job.runnerGroupId = runner.runnerGroupId;
    this.webhooks.send('workflow_job', workflowJobPayload('in_progress', job));
    this.jobEvents?.started(job, runner);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!job.lost) this.complete(job, runner, job.plannedConclusion);
    }, job.durationMs);
    this.timers.add(timer);
  }

  /** GitHub fails a job whose runner vanished: completed webhook, runner no longer busy, still registered (offline). */
  private giveUp(job: SimJob, runner: SimRunner): void {
    if (job.status === 'completed') return;
    job.status = 'completed';
    job.conclusion = 'failure';
    job.completedAt = new Date().toISOString();
    runner.busy = false;
    runner.jobId = undefined;
    this.webhooks.send('workflow_job', workflowJobPayload('completed', job));
    this.dispatch();
  }

  private complete(job: SimJob, runner: SimRunner, conclusion: SimJob['conclusion']): void {
    if (job.status === 'completed') return;
    job.status = 'completed';
    job.conclusion = conclusion;
    job.completedAt = new Date().toISOString();
    runner.busy = false;
    runner.jobId = undefined;
    this.webhooks.send('workflow_job', workflowJobPayload('completed', job));
    this.jobEvents?.completed(job, runner, conclusion === 'success' ? 'succeeded' : (conclusion ?? 'failed'));
    const agent = [...this.agents.values()].find((a) => a.runnerId === runner.id && a.state !== 'done');
    if (runner.ephemeral) {
      this.state.runners.delete(runner.id);
      if (agent) this.end(agent, 'job_completed');
      return;
    }
    if (agent && agent.state === 'busy') agent.state = 'idle';
    this.dispatch();
  }

  private end(agent: SimAgent, reason: NonNullable<SimAgent['endReason']>): void {
    agent.state = 'done';
    agent.endReason = reason;
    for (const wake of this.waiters.get(agent.id) ?? []) wake();
    this.waiters.delete(agent.id);
  }

  /**
   * Tells runnerflow the runner is up. Tried a few times, as a real bootstrap script
   * does (GARM's retries its status calls with curl): one lost answer under load must
   * not leave a runner that GitHub shows online looking unborn to its workflow.
   */
  private async reportIdle(agent: SimAgent): Promise<void> {
    if (!agent.callbackUrl) return;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (agent.instanceToken) headers.authorization = `Bearer ${agent.instanceToken}`;
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      try {
        const res = await fetch(agent.callbackUrl, {
          method: 'POST',
          headers,
          body: JSON.stringify({ status: 'idle' }),
          signal: AbortSignal.timeout(5_000),
        });
        await res.arrayBuffer();
        // A 4xx (bad token, unknown runner) will not change on a retry.
        if (res.ok || (res.status >= 400 && res.status < 500 && res.status !== 429)) {
          if (!res.ok) this.onError(`runner ${agent.runnerName}: status callback answered ${res.status}`);
          return;
        }
        failure = `answered ${res.status}`;
      } catch (err) {
        failure = `failed: ${(err as Error).message}`;
      }
      if (attempt >= CALLBACK_ATTEMPTS || this.closed || agent.state === 'done') {
        this.onError(`runner ${agent.runnerName}: status callback ${failure}`);
        return;
      }
      await new Promise((r) => setTimeout(r, CALLBACK_RETRY_MS * attempt));
    }
  }
}
