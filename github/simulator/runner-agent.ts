/**
 * A stand-in for `run.sh --jitconfig` against the GitHub simulator: registers
 * the agent, stays alive until its ephemeral job is done (or its runner is
 * removed), then exits 0. A local process provider can run it like the real one.
 *
 *   tsx github/simulator/runner-agent.ts --jitconfig <encoded> \
 *     [--sim http://127.0.0.1:PORT] [--callback-url URL --instance-token TOKEN]
 *
 * Each flag falls back to RUNNERFLOW_JIT_CONFIG, RUNNERFLOW_CALLBACK_URL and
 * RUNNERFLOW_INSTANCE_TOKEN, as the local process provider sets them. The
 * simulator URL defaults to the one inside the JIT config, then to
 * $GITHUB_SIMULATOR_URL. The JIT config and token are never printed.
 */
import { parseArgs } from 'node:util';
import { decodeJitConfig } from './jit-config';
import { sleep } from './http-util';

interface AgentAnswer {
  id?: string;
  state?: string;
  runnerName?: string;
  error?: { message?: string };
}

async function call(url: string, init?: RequestInit): Promise<{ status: number; body: AgentAnswer }> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as AgentAnswer) : {} };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      jitconfig: { type: 'string' },
      sim: { type: 'string' },
      'callback-url': { type: 'string' },
      'instance-token': { type: 'string' },
    },
  });
  // The environment is how a local-process provider hands over secrets: a command line is visible to `ps`.
  const jitConfig = values.jitconfig ?? process.env.RUNNERFLOW_JIT_CONFIG;
  const callbackUrl = values['callback-url'] ?? process.env.RUNNERFLOW_CALLBACK_URL;
  const instanceToken = values['instance-token'] ?? process.env.RUNNERFLOW_INSTANCE_TOKEN;
  if (!jitConfig) {
    console.error('runner-agent: a JIT config is required (--jitconfig or RUNNERFLOW_JIT_CONFIG)');
    return 2;
  }
  const simUrl = (values.sim ?? decodeJitConfig(jitConfig)?.serverUrl ?? process.env.GITHUB_SIMULATOR_URL ?? '').replace(/\/+$/, '');
  if (!simUrl) {
    console.error('runner-agent: no simulator URL (use --sim or GITHUB_SIMULATOR_URL)');
    return 2;
  }
  const started = await call(`${simUrl}/_sim/agents`, {
    method: 'POST',
    body: JSON.stringify({ jitConfig, callbackUrl: callbackUrl || undefined, instanceToken: instanceToken || undefined }),
  });
  if (started.status !== 201 || !started.body.id) {
    console.error(`runner-agent: the simulator refused the agent (${started.status}): ${started.body.error?.message ?? ''}`);
    return 1;
  }
  const agentId = started.body.id;
  console.log(`runner-agent: ${started.body.runnerName} connected; listening for jobs`);

  const stop = (): void => {
    void call(`${simUrl}/_sim/agents/${agentId}`, { method: 'DELETE' }).finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);

  let failures = 0;
  for (;;) {
    try {
      const waited = await call(`${simUrl}/_sim/agents/${agentId}/wait?timeoutMs=25000`);
      failures = 0;
      if (waited.status === 404) {
        console.error('runner-agent: the simulator forgot this agent');
        return 1;
      }
      if (waited.body.state === 'done') {
        console.log(`runner-agent: ${started.body.runnerName} finished`);
        return 0;
      }
    } catch (err) {
      // The real runner also retries its connection for a while before giving up.
      if (++failures > 10) {
        console.error(`runner-agent: simulator unreachable: ${(err as Error).message}`);
        return 1;
      }
      await sleep(1000);
    }
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`runner-agent: ${(err as Error).message}`);
    process.exit(1);
  },
);
