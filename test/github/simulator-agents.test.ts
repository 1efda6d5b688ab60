import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GitHubScope } from '../../github/port';
import { startSimulatedGitHub, type SimulatedGitHub } from './support/simulated-github';
import { startWebhookReceiver } from './support/webhook-receiver';
import { RecordingSink } from './support/recording-sink';
import { WEBHOOK_SECRET } from './support/signed-request';

const ROOT = resolve(import.meta.dirname, '../..');
const org: GitHubScope = { kind: 'org', org: 'octo-org' };

let env: SimulatedGitHub;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeEach(async () => {
  receiver = await startWebhookReceiver(WEBHOOK_SECRET, new RecordingSink((name) => name.startsWith('pool-')));
  env = await startSimulatedGitHub({ webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET, jobDurationMs: 50 });
});
afterEach(async () => {
  await env.sim.close();
  await receiver.close();
});

async function mint(name: string, labels: string[]): Promise<{ runnerId: number; jitConfig: string }> {
  const credential = await env.github.createRunnerCredential({ scope: org, name, labels, runnerGroupId: 1, workFolder: '_work', jit: true });
  if (credential.kind !== 'jit') throw new Error('expected a JIT credential');
  return { runnerId: credential.runnerId, jitConfig: credential.encodedJitConfig };
}

const actions = () => receiver.received.map((d) => `${String(d.headers['x-github-event'])}:${(JSON.parse(d.body) as { action: string }).action}`);

describe('simulated runner agents', () => {
  it('queue a job → matching agent takes it → signed queued/in_progress/completed webhooks arrive; the ephemeral runner leaves', async () => {
    const { runnerId, jitConfig } = await mint('pool-a-1', ['linux', 'GPU']);
    const agent = await env.sim.startAgent({ jitConfig, callbackUrl: receiver.callbackUrl, instanceToken: 'instance-token-1' });
    // The report goes out beside the runner's listening for jobs, as a bootstrap calls home.
    await expect.poll(() => receiver.callbacks).toEqual([{ authorization: 'Bearer instance-token-1', body: { status: 'idle' } }]);

    const job = env.sim.queueJob({ repository: 'octo-org/app', labels: ['self-hosted', 'gpu'], conclusion: 'failure' });
    expect(await env.sim.waitForAgent(agent.id, 5_000)).toBe('done');
    await env.sim.webhooksIdle();

    expect(actions()).toEqual(['workflow_job:queued', 'workflow_job:in_progress', 'workflow_job:completed']);
    // Each arrived signed, with its own delivery id, and passed the real intake.
    expect(receiver.received.map((d) => d.status)).toEqual([200, 200, 200]);
    expect(new Set(receiver.received.map((d) => d.headers['x-github-delivery'])).size).toBe(3);
    expect(receiver.received.every((d) => String(d.headers['x-hub-signature-256']).startsWith('sha256='))).toBe(true);
    expect(receiver.sink.calls).toEqual([
      { kind: 'queued', job: expect.objectContaining({ jobId: job.id, labels: ['self-hosted', 'gpu'], repository: 'octo-org/app' }) as unknown },
      { kind: 'started', runnerName: 'pool-a-1', args: { jobId: job.id, runId: job.runId } },
      { kind: 'completed', runnerName: 'pool-a-1', args: { jobId: job.id, conclusion: 'failure' } },
    ]);
    const started = JSON.parse(receiver.received[1]?.body ?? '{}') as { workflow_job: { runner_id: number } };
    expect(started.workflow_job.runner_id).toBe(runnerId);
    expect(env.sim.runners()).toEqual([]);
  });

  it('leaves a job queued while no runner has its labels, and gives it to one that does', async () => {
    const wrong = await mint('pool-b-1', ['windows']);
    const wrongAgent = await env.sim.startAgent({ jitConfig: wrong.jitConfig });
    const job = env.sim.queueJob({ repository: 'octo-org/app', labels: ['linux'] });
    expect(env.sim.jobs().find((j) => j.id === job.id)?.status).toBe('queued');
    const right = await mint('pool-b-2', ['Linux']);
    const rightAgent = await env.sim.startAgent({ jitConfig: right.jitConfig });
    expect(await env.sim.waitForAgent(rightAgent.id, 5_000)).toBe('done');
    expect(env.sim.jobs().find((j) => j.id === job.id)).toMatchObject({ status: 'completed', runnerName: 'pool-b-2' });
    expect(env.sim.agents().find((a) => a.id === wrongAgent.id)?.state).toBe('idle');
  });

  it('does not run jobs of another organisation', async () => {
    const { jitConfig } = await mint('pool-c-1', ['linux']);
    await env.sim.startAgent({ jitConfig });
    const job = env.sim.queueJob({ repository: 'other-org/app', labels: ['linux'] });
    await new Promise((r) => setTimeout(r, 100));
    expect(env.sim.jobs().find((j) => j.id === job.id)?.status).toBe('queued');
  });

  it('ends an idle agent whose runner is removed, and refuses its stale JIT config', async () => {
    const { runnerId, jitConfig } = await mint('pool-d-1', ['linux']);
    const agent = await env.sim.startAgent({ jitConfig });
    expect(await env.github.removeRunner({ scope: org, name: 'pool-d-1', runnerId })).toBe('removed');
    expect(env.sim.agents().find((a) => a.id === agent.id)).toMatchObject({ state: 'done', endReason: 'runner_removed' });
    await expect(env.sim.startAgent({ jitConfig })).rejects.toThrow(/not registered/);
  });

  it('cancelling a queued job sends completed without a runner', async () => {
    const job = env.sim.queueJob({ labels: ['linux'] });
    expect(env.sim.cancelJob(job.id)).toBe(true);
    await env.sim.webhooksIdle();
    expect(actions()).toEqual(['workflow_job:queued', 'workflow_job:completed']);
    expect(receiver.received[1]?.result).toEqual({ result: 'no_runner' });
  });

  it('loses and duplicates deliveries on request', async () => {
    env.sim.setFault({ kind: 'lose-webhooks', action: 'queued', times: 1 });
    env.sim.setFault({ kind: 'duplicate-webhooks', action: 'completed', times: 1 });
    const { jitConfig } = await mint('pool-e-1', ['linux']);
    const agent = await env.sim.startAgent({ jitConfig });
    env.sim.queueJob({ labels: ['linux'] });
    await env.sim.waitForAgent(agent.id, 5_000);
    await env.sim.webhooksIdle();
    expect(actions()).toEqual(['workflow_job:in_progress', 'workflow_job:completed', 'workflow_job:completed']);
    expect(receiver.received[1]?.headers['x-github-delivery']).toBe(receiver.received[2]?.headers['x-github-delivery']);
    expect(receiver.received[2]?.result).toEqual({ result: 'duplicate' });
    expect(env.sim.stats().webhooks).toMatchObject({ sent: 3, lost: 1, duplicated: 1, delivered: 3 });
  });

  it('runner-agent CLI runs like run.sh --jitconfig: registers, runs one job, exits 0', async () => {
    const { jitConfig } = await mint('pool-f-1', ['linux']);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', resolve(ROOT, 'github/simulator/runner-agent.ts'), '--jitconfig', jitConfig, '--callback-url', receiver.callbackUrl, '--instance-token', 'tok-f'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    for (let i = 0; i < 100 && receiver.callbacks.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(receiver.callbacks).toEqual([{ authorization: 'Bearer tok-f', body: { status: 'idle' } }]);
    env.sim.queueJob({ labels: ['linux'] });
    expect(await exited).toBe(0);
    expect(output).not.toContain(jitConfig);
    expect(env.sim.jobs()[0]).toMatchObject({ status: 'completed', runnerName: 'pool-f-1' });
  });
});
