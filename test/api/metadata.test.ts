/**
 * GARM's install templates fetch a registration token or their JIT files from
 * the metadata URL with the instance's token, and report `idle` with an
 * `agent_id`. The token also reaches every job the runner runs, so credentials
 * go out only while the runner is still installing, as in GARM.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mintInstanceToken } from '../../api/instance-token';
import { startHttpServer } from '../../api/node-server';
import { jitFilesFetch } from '../../providers/aws-ec2/user-data';
import { seal } from '../../api/sealed-secret';
import { GitHubRateLimitError, type RunnerCredential, type RunnerCredentialRequest } from '../../github/port';
import { instanceStartOptions } from '../../workflows/instance-options';
import {
  RUNNER_INSTANCE_WORKFLOW,
  deleteSignal,
  forceDeleteSignal,
  jobStartedSignal,
  runnerStatusSignal,
  stateQuery,
  type InstanceSpec,
  type InstanceState,
  type RunnerInstanceInput,
} from '../../workflows/messages';
import { waitForStatus } from '../instance/helpers';
import { GitHubDouble } from '../support/github-double';
import { eventually, instanceInput, uniqueName, useTestWorker } from '../support/temporal';
import { signalsOf } from './history';
import { INSTANCE_TOKEN_KEY, expectError, testApp, type TestApp } from './support';

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** GitHub's JIT config: base64 JSON of the runner's base64 settings files. */
class JitFilesGitHub extends GitHubDouble {
  override async createRunnerCredential(req: RunnerCredentialRequest): Promise<RunnerCredential> {
    const credential = await super.createRunnerCredential(req);
    if (credential.kind !== 'jit') return credential;
    const files = { '.runner': b64(JSON.stringify({ AgentName: req.name })), '.credentials': b64(`creds-of-${req.name}`), '.credentials_rsaparams': b64(`rsa-of-${req.name}`) };
    return { ...credential, encodedJitConfig: b64(JSON.stringify(files)) };
  }
}

const env = useTestWorker({ github: new JitFilesGitHub(), activities: { sealSecret: (plain) => seal(plain, INSTANCE_TOKEN_KEY) } });
/** The API's own GitHub port, which hands out registration tokens. */
const github = new GitHubDouble();
let api: TestApp;
/** Workflow calls the API made, to keep the cost of a file fetch in sight. */
const calls = { describe: 0, query: 0 };
const started: WorkflowHandle[] = [];

beforeAll(() => {
  const counting = new Client({
    connection: env.client.connection,
    interceptors: {
      workflow: [
        {
          describe: (input, next) => {
            calls.describe += 1;
            return next(input);
          },
          query: (input, next) => {
            calls.query += 1;
            return next(input);
          },
        },
      ],
    },
  });
  api = testApp(counting, env.w.taskQueue, { github });
});

afterEach(async () => {
  env.w.fake.clearFaults();
  await Promise.all(started.splice(0).map((handle) => handle.signal(forceDeleteSignal, { reason: 'test done' }).catch(() => undefined)));
});

async function start(input: RunnerInstanceInput): Promise<WorkflowHandleWithFirstExecutionRunId> {
  const handle = await env.client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue: env.w.taskQueue, ...instanceStartOptions(input) });
  started.push(handle);
  return handle;
}

/** A runner machine that is up and installing its runner: JIT (ephemeral) unless `spec` says otherwise. */
async function installing(spec: Partial<InstanceSpec> = {}): Promise<{ name: string; token: string; handle: WorkflowHandleWithFirstExecutionRunId }> {
  const name = uniqueName('garm');
  const handle = await start(instanceInput(name, {}, spec));
  await waitForStatus(handle, 'running');
  const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
  return { name, token, handle };
}
const STATIC = { ephemeral: false };

async function until(handle: WorkflowHandle, what: string, check: (state: InstanceState) => boolean): Promise<void> {
  await eventually(async () => check(await handle.query(stateQuery)), 10_000, what);
}

const registrationToken = (token: string) => api.call('GET', '/api/v1/metadata/runner-registration-token/', { token });
const jitFile = (token: string, file = 'runner') => api.call('GET', `/api/v1/metadata/credentials/${file}`, { token });
const report = (token: string, status: string) => api.call('POST', '/api/v1/callbacks/status', { token, body: { status } });
const tokensHandedTo = (name: string) => github.calls.filter((c) => c.op === 'credential' && c.name === name).length;

describe('GET /api/v1/metadata/runner-registration-token/', () => {
  it('hands a runner that is still installing a registration token for its own scope', async () => {
    const { name, token } = await installing(STATIC);
    const response = await registrationToken(token);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.text()).toBe(`REGTOKEN-${name}`);
    expect(github.calls.filter((c) => c.op === 'credential' && c.name === name).map((c) => c.outcome)).toEqual(['registration-token']);
  });

  it('refuses a runner that reported idle through the status callback, which still takes its reports', async () => {
    const { name, token, handle } = await installing(STATIC);
    expect((await report(token, 'idle')).status).toBe(202);
    await until(handle, 'idle', (s) => s.runnerStatus === 'idle');
    const error = await expectError(await registrationToken(token), 403, 'instance_registered');
    expect(error.message).toContain(`instance ${name} has registered with GitHub`);
    expect(error.details).toEqual({ status: 'running', runnerStatus: 'idle' });
    expect(tokensHandedTo(name)).toBe(0);
    expect((await report(token, 'failed')).status).toBe(202);
  });

  it('refuses a runner that reported idle through the runnerStatus signal, which does not install again when a job on it says so', async () => {
    const { name, token, handle } = await installing(STATIC);
    await handle.signal(runnerStatusSignal, { status: 'idle' });
    await until(handle, 'idle', (s) => s.runnerStatus === 'idle');
    await expectError(await registrationToken(token), 403, 'instance_registered');

    // A job on the runner holds its token and can report `installing` itself: the runner does not
    // take it, so the credentials stay closed.
    await handle.signal(jobStartedSignal, { jobId: 4711 });
    await until(handle, 'the job started', (s) => s.jobId === 4711 && s.runnerStatus === 'active');
    expect((await report(token, 'installing')).status).toBe(202);
    expect((await handle.query(stateQuery)).runnerStatus).toBe('active');
    const error = await expectError(await registrationToken(token), 403, 'instance_registered');
    expect(error.message).toContain('job 4711 started on it');
    expect(tokensHandedTo(name)).toBe(0);
  });

  it('refuses a runner that registers with its JIT config', async () => {
    const { name, token } = await installing();
    const error = await expectError(await registrationToken(token), 403, 'instance_uses_jit');
    expect(error.message).toContain(`instance ${name} registers with its JIT config`);
    expect(tokensHandedTo(name)).toBe(0);
  });

  it('refuses a missing token, and a token of a deleted instance', async () => {
    await expectError(await api.call('GET', '/api/v1/metadata/runner-registration-token', { token: null }), 401, 'unauthenticated');
    const { token, handle } = await installing(STATIC);
    await handle.terminate('test');
    await expectError(await registrationToken(token), 403, 'forbidden');
  });

  it('says when GitHub is rate limited, with Retry-After', async () => {
    const { token } = await installing(STATIC);
    github.setFault('credential', { failTimes: 1, error: () => new GitHubRateLimitError('primary', 42_000) });
    const response = await registrationToken(token);
    expect(response.headers.get('retry-after')).toBe('42');
    await expectError(response, 503, 'github_rate_limited');
  });
});

describe('GET /api/v1/metadata/credentials/:file', () => {
  it('serves a JIT runner that is still installing its files, for two queries and no describe', async () => {
    const { name, token } = await installing();
    const before = { ...calls };
    const response = await jitFile(token);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(await response.text())).toEqual({ AgentName: name });
    expect({ describe: calls.describe - before.describe, query: calls.query - before.query }).toEqual({ describe: 0, query: 2 });
    expect(await (await jitFile(token, 'credentials')).text()).toBe(`creds-of-${name}`);
    expect(await (await jitFile(token, 'credentials_rsaparams')).text()).toBe(`rsa-of-${name}`);
  });

  it('refuses the files once the runner reported idle, through the status callback or the runnerStatus signal', async () => {
    const viaCallback = await installing();
    const viaSignal = await installing();
    expect((await report(viaCallback.token, 'idle')).status).toBe(202);
    await viaSignal.handle.signal(runnerStatusSignal, { status: 'idle' });
    for (const { name, token, handle } of [viaCallback, viaSignal]) {
      await until(handle, 'idle', (s) => s.runnerStatus === 'idle');
      for (const file of ['runner', 'credentials', 'credentials_rsaparams']) {
        const error = await expectError(await jitFile(token, file), 403, 'instance_registered');
        expect(error.message).toContain(`instance ${name} has registered with GitHub (its runner is idle)`);
        expect(error.message).not.toContain(`creds-of-${name}`);
      }
    }
  });

  it("serves a runner still installing after it continued as new, with its first run's token", async () => {
    const name = uniqueName('garm-continued');
    const handle = await start({ ...instanceInput(name), historyLimit: 40 });
    await waitForStatus(handle, 'running');
    const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
    await eventually(async () => {
      await handle.signal(runnerStatusSignal, { status: 'installing', message: 'still installing' });
      return (await handle.describe()).runId !== handle.firstExecutionRunId;
    }, 20_000, 'a continued run');
    const response = await jitFile(token);
    expect(response.status).toBe(200);
    expect(JSON.parse(await response.text())).toEqual({ AgentName: name });
  });
});

describe("the EC2 boot script's fetch of the JIT files", () => {
  it('writes the three files a runner reads, from the real route, and gets none once the runner has registered', async () => {
    const server = await startHttpServer(api.app, '127.0.0.1:0');
    const dir = mkdtempSync(join(tmpdir(), 'jit-files-'));
    try {
      const { name, token, handle } = await installing();
      // Asynchronously: the API answering curl runs in this process.
      const fetchFiles = () =>
        new Promise<{ status: number | null; stderr: string }>((resolve) => {
          const child = spawn('bash', ['-euo', 'pipefail', '-c', jitFilesFetch().join('\n')], {
            cwd: dir,
            env: { PATH: process.env.PATH, METADATA_URL: `${server.url}/api/v1/metadata/`, INSTANCE_TOKEN: token },
            // Not a socket on stdin: bash would take itself for a remote shell and read bashrc.
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let stderr = '';
          child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
          child.on('close', (status) => resolve({ status, stderr }));
        });
      const fetched = await fetchFiles();
      expect(fetched.stderr).toBe('');
      expect(fetched.status).toBe(0);
      expect(JSON.parse(readFileSync(join(dir, '.runner'), 'utf8'))).toEqual({ AgentName: name });
      expect(readFileSync(join(dir, '.credentials'), 'utf8')).toBe(`creds-of-${name}`);
      expect(readFileSync(join(dir, '.credentials_rsaparams'), 'utf8')).toBe(`rsa-of-${name}`);

      // A job on the machine reads the instance token back from user data: it gets nothing with it.
      await handle.signal(runnerStatusSignal, { status: 'idle' });
      await until(handle, 'idle', (s) => s.runnerStatus === 'idle');
      rmSync(join(dir, '.runner'));
      const refused = await fetchFiles();
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('403');
      expect(existsSync(join(dir, '.runner'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await server.close();
    }
  });
});

describe('a runner on its way out', () => {
  it('gets no credentials while it is being deleted, nor once it is gone', async () => {
    const jit = await installing();
    const byToken = await installing(STATIC);
    env.w.fake.setFault('delete', { failForever: true });
    for (const { handle } of [jit, byToken]) {
      await handle.signal(deleteSignal, { reason: 'scale down' });
      await until(handle, 'deleting', (s) => s.status === 'pending_delete' || s.status === 'deleting');
    }
    const error = await expectError(await jitFile(jit.token), 403, 'instance_leaving');
    expect(error.message).toMatch(new RegExp(`instance ${jit.name} is (pending_delete|deleting)`));
    await expectError(await registrationToken(byToken.token), 403, 'instance_leaving');
    expect(tokensHandedTo(byToken.name)).toBe(0);

    env.w.fake.clearFaults();
    await Promise.all([jit.handle.result(), byToken.handle.result()]);
    await expectError(await jitFile(jit.token), 403, 'forbidden');
    await expectError(await registrationToken(byToken.token), 403, 'forbidden');
  });
});

describe("GARM's idle report", () => {
  it('is accepted with its agent_id and reaches the instance as idle', async () => {
    const { name, token, handle } = await installing(STATIC);
    const response = await api.call('POST', '/api/v1/callbacks/status', { token, body: { status: 'idle', message: 'runner successfully installed', agent_id: 17 } });
    expect(response.status).toBe(202);
    expect(await signalsOf(env.client, `runner/${name}`, handle.firstExecutionRunId)).toEqual([{ name: 'runnerStatus', input: { status: 'idle', message: 'runner successfully installed' } }]);
  });
});
