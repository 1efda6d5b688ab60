/**
 * Secrets fed through every log site that can see one — webhook intake, API
 * errors, GitHub client errors and provider errors surfacing from activities
 * (logged by the Temporal SDK's runtime logger), and the logger's own fields —
 * never reach a log line, in JSON or pretty format, nor workflow history.
 */
import { generateKeyPairSync, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, type RootLogger } from '../../observability/logger';
import { installTemporalRuntime } from '../../observability/temporal-runtime';
import { mintInstanceToken } from '../../api/instance-token';
import { seal } from '../../api/sealed-secret';
import { handleGitHubWebhook, type WorkflowJobSink } from '../../api/webhooks/github';
import { resolveSecret } from '../../config/load';
import { reportErrorText } from '../../activities/failures';
import { OctokitGitHub } from '../../github/octokit-github';
import { instanceStartOptions } from '../../workflows/instance-options';
import { forceDeleteSignal, RUNNER_INSTANCE_WORKFLOW } from '../../workflows/messages';
import { cleanupWorkflowId } from '../../workflows/cleanup-messages';
import { waitForStatus } from '../instance/helpers';
import { connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { INSTANCE_TOKEN_KEY, testApp } from '../api/support';

const lines: string[] = [];
const collector = (): Writable =>
  new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
const json: RootLogger = createLogger({ format: 'json', level: 'debug', destination: collector() });
const pretty: RootLogger = createLogger({ format: 'pretty', level: 'debug', destination: collector() });
// Before any worker: the SDK's logs (activity failures included) go through the JSON logger.
installTemporalRuntime(json.pino, { level: 'INFO' });

const PAT = `ghp_${randomBytes(18).toString('hex')}`;
const JIT_CONFIG = Buffer.from(JSON.stringify({ '.runner': randomBytes(24).toString('base64'), '.credentials': randomBytes(24).toString('base64') })).toString('base64');
const PRIVATE_KEY = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const KEY_BODY = PRIVATE_KEY.split('\n')[1]!;
const REGISTRATION_TOKEN = `AABF${randomBytes(12).toString('hex').toUpperCase()}`;
const ADMIN_TOKEN = `admin-${randomBytes(12).toString('hex')}`;
const WEBHOOK_SECRET = `hook-${randomBytes(12).toString('hex')}`;
let instanceToken = '';
let sealed = '';

const secrets = (): string[] => [PAT, JIT_CONFIG, KEY_BODY, REGISTRATION_TOKEN, ADMIN_TOKEN, WEBHOOK_SECRET, instanceToken, sealed];
const everything = (): string => `${PAT} ${JIT_CONFIG} ${PRIVATE_KEY} ${instanceToken} ${sealed} Authorization: Bearer ${ADMIN_TOKEN}`;

/**
 * A history as text, payloads included: a payload's data comes base64-encoded (or as
 * bytes), so a secret inside an activity's result or a workflow's input would not be
 * seen in the history as the client returns it.
 */
function historyText(history: unknown): string {
  return JSON.stringify(history, (key, value: unknown) => {
    if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
    if (key === 'data' && typeof value === 'string') return Buffer.from(value, 'base64').toString('utf8');
    return value;
  });
}

function expectNoSecretLogged(): void {
  const output = lines.join('');
  for (const secret of secrets()) expect(output.includes(secret), `a secret reached the log: ${secret.slice(0, 8)}…`).toBe(false);
}

let workers: TestWorker[] = [];
let fakeGitHub: Server;
beforeAll(async () => {
  // The config path registers resolved secrets; admin token and webhook secret come through it.
  resolveSecret({ env: 'RF_TEST_ADMIN' }, { RF_TEST_ADMIN: ADMIN_TOKEN });
  resolveSecret({ env: 'RF_TEST_HOOK' }, { RF_TEST_HOOK: WEBHOOK_SECRET });
  instanceToken = await mintInstanceToken({ instance: 'r1', runId: 'run', pool: 'p' }, INSTANCE_TOKEN_KEY, 60_000);
  sealed = seal(JIT_CONFIG, INSTANCE_TOKEN_KEY);
  // A GitHub that quotes the caller's credentials back in its error, as a misbehaving proxy might.
  fakeGitHub = createServer((req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: `Bad credentials: ${req.headers.authorization ?? ''} key ${PRIVATE_KEY}`, documentation_url: 'https://docs.github.com/rest' }));
  });
  await new Promise<void>((r) => fakeGitHub.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await new Promise((r) => fakeGitHub.close(r));
});

describe('log redaction', () => {
  it('censors secret-bearing fields at any depth and scrubs credentials out of messages, in both formats', () => {
    for (const logger of [json, pretty]) {
      logger.info(`starting with ${everything()}`, {
        token: PAT,
        registrationToken: REGISTRATION_TOKEN,
        headers: { authorization: `token ${PAT}`, 'x-hub-signature-256': 'sha256=abc' },
        request: { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
        bootstrap: { jitConfig: JIT_CONFIG, instanceToken, privateKey: PRIVATE_KEY },
        config: { webhookSecret: WEBHOOK_SECRET, instanceTokenSecret: INSTANCE_TOKEN_KEY, sealedJitConfig: sealed },
        error: new Error(`failed with ${everything()}`),
        list: [PAT, { jitconfig: JIT_CONFIG }],
      });
      logger.child({ component: 'child' }).warn('child line', { detail: everything() });
    }
    expectNoSecretLogged();
    expect(lines.join('')).toContain('[redacted]');
  });

  it('keeps secrets out of the error text a periodic pass writes into its report (workflow history), bounded after scrubbing', () => {
    const text = reportErrorText(new Error(`provider said: ${everything()}`), 10_000);
    for (const secret of secrets()) expect(text.includes(secret), `a secret reached the report: ${secret.slice(0, 8)}…`).toBe(false);
    expect(text).toContain('provider said: [redacted]');
    // The cut comes after the scrub: a token cut short would no longer look like one.
    const cut = reportErrorText(`x ${PAT}`, 12);
    expect(cut).toBe(`x [redacted]`.slice(0, 12));
    expect(reportErrorText(new Error('a'.repeat(500)))).toHaveLength(300);
  });

  it('keeps secrets out of the webhook intake logs (signature mismatch, a failing hand-over)', async () => {
    const sink: WorkflowJobSink = {
      jobQueued: async () => {
        throw new Error(`Temporal rejected the signal: ${everything()}`);
      },
      jobStarted: async () => 'signalled',
      jobCompleted: async () => 'signalled',
    };
    const body = JSON.stringify({ action: 'queued', workflow_job: { id: 1, labels: ['self-hosted'] }, token: PAT });
    const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
    const request = (sig: string) =>
      new Request('http://x/webhooks/github', {
        method: 'POST',
        body,
        headers: { 'x-github-event': 'workflow_job', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sig, authorization: `token ${PAT}` },
      });
    const logger = json.child({ component: 'api' });
    expect((await handleGitHubWebhook(request(signature), { secret: WEBHOOK_SECRET, sink, logger })).status).toBe(500);
    expect((await handleGitHubWebhook(request('sha256=00'), { secret: WEBHOOK_SECRET, sink, logger })).status).toBe(401);
    expect(lines.join('')).toContain('webhook not handed over');
    expectNoSecretLogged();
  });

  it('keeps secrets out of the log of an API request that fails unexpectedly (500)', async () => {
    const { client, connection } = await connectClient();
    // The metadata service asks the instance for its state: a worker answers.
    const worker = await startTestWorker();
    try {
      const taskQueue = worker.taskQueue;
      const app = testApp(client, taskQueue, { logger: json.child({ component: 'api' }) });
      app.github.setFault('credential', { failTimes: 1, error: () => new Error(`octokit blew up: ${everything()}`) });
      // A static runner, still installing: the one kind the registration token is for.
      const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue, ...instanceStartOptions(instanceInput(uniqueName('redact'), {}, { ephemeral: false })) });
      const name = handle.workflowId.replace(/^runner\//, '');
      const token = await mintInstanceToken({ instance: name, runId: handle.firstExecutionRunId, pool: 'test-pool' }, INSTANCE_TOKEN_KEY, 60_000);
      const res = await app.call('GET', '/api/v1/metadata/runner-registration-token/', { token });
      expect(res.status).toBe(500);
      const answer = await res.text();
      for (const secret of secrets()) expect(answer.includes(secret)).toBe(false);
      expect(lines.join('')).toContain('"message":"request failed"');
      expectNoSecretLogged();
      await handle.terminate('test done');
    } finally {
      await worker.stop();
      await connection.close();
    }
  });

  it('keeps GitHub client and provider errors out of the worker logs and out of workflow history', async () => {
    const github = new OctokitGitHub({
      credentialsName: 'default',
      apiUrl: `http://127.0.0.1:${(fakeGitHub.address() as AddressInfo).port}`,
      auth: { type: 'pat', token: PAT },
      logger: json.child({ component: 'github' }),
    });
    const ghWorker = await startTestWorker({ github });
    const providerWorker = await startTestWorker();
    workers = [ghWorker, providerWorker];
    providerWorker.fake.setFault('create', { failForever: true, message: `cloud said no: ${everything()}` });
    const { client, connection } = await connectClient();
    try {
      const handles = await Promise.all(
        [ghWorker, providerWorker].map((w) =>
          client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue: w.taskQueue, ...instanceStartOptions(instanceInput(uniqueName('redact'))) }),
        ),
      );
      await eventually(() => /Bad credentials/.test(lines.join('')) && /cloud said no/.test(lines.join('')), 30_000, 'both failures logged');
      // Broken credentials would keep the graceful delete asking GitHub forever: end both runners now.
      const histories = await Promise.all(
        handles.map(async (handle) => {
          await handle.signal(forceDeleteSignal, { reason: 'test done' });
          await handle.result();
          return historyText(await handle.fetchHistory());
        }),
      );
      for (const history of histories) for (const secret of secrets()) expect(history.includes(secret), 'a secret in workflow history').toBe(false);
      const output = lines.join('');
      // The SDK did log both failures, through pino.
      expect(output).toContain('"component":"temporal-sdk"');
      expect(output).toMatch(/Bad credentials/);
      expect(output).toMatch(/cloud said no/);
      expectNoSecretLogged();
    } finally {
      await connection.close();
    }
  });

  it('keeps a provider error out of a forced delete’s result and its clean-up, both in workflow history', async () => {
    const worker = await startTestWorker();
    workers.push(worker);
    const { client, connection } = await connectClient();
    const name = uniqueName('redact-forced');
    try {
      const handle = await client.workflow.start(RUNNER_INSTANCE_WORKFLOW, { taskQueue: worker.taskQueue, ...instanceStartOptions(instanceInput(name)) });
      await waitForStatus(handle, 'running');
      // The provider answers every delete with an error that quotes secrets back.
      worker.fake.setFault('delete', { failForever: true, message: `cloud said no: ${everything()}`, instance: name });
      await handle.signal(forceDeleteSignal, { reason: 'test done' });
      const final = await handle.result();
      expect(final.leaked).toBe(true);
      const cleanup = client.workflow.getHandle(cleanupWorkflowId(name));
      // A retried activity's failures are not in history until it gives up; the Web UI shows the last one.
      const lastFailure = await eventually(async () => {
        const pending = (await cleanup.describe()).raw.pendingActivities ?? [];
        return pending.map((a) => a.lastFailure?.message ?? '').find((m) => m.includes('cloud said no'));
      }, 20_000, 'the clean-up to try the delete');
      for (const text of [lastFailure, historyText(await handle.fetchHistory()), historyText(await cleanup.fetchHistory())]) {
        for (const secret of secrets()) expect(text.includes(secret), `a secret in workflow history: ${secret.slice(0, 8)}…`).toBe(false);
      }
      expect(historyText(await handle.fetchHistory())).toContain('cloud said no');
      await cleanup.terminate('test done');
    } finally {
      await connection.close();
    }
  });
});
