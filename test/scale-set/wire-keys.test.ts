/**
 * The simulator's Actions-service answers use the JSON keys of GitHub's own Go
 * client (actions/scaleset types.go at GO_CLIENT_REVISION): a key that client
 * does not know would let runnerflow's client drift from the real service unseen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionsServiceClient } from '../../github/actions/client';
import { GO_CLIENT_JSON_KEYS, GO_CLIENT_REVISION } from '../../github/actions/types';
import { OctokitGitHub } from '../../github/octokit-github';
import type { GitHubScope } from '../../github/port';
import { registrationTokenFor } from '../../github/registry';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';

type Shape = keyof typeof GO_CLIENT_JSON_KEYS;
const scope: GitHubScope = { kind: 'repo', owner: 'acme', repo: 'app' };
let sim: GitHubSimulator;

beforeAll(async () => {
  sim = await startGitHubSimulator({ longPollMs: 200, jobDurationMs: 100, recordResponses: true, onError: () => undefined });
});
afterAll(async () => {
  await sim.close();
});

const NESTED: Partial<Record<Shape, Record<string, Shape>>> = {
  RunnerScaleSet: { labels: 'Label', RunnerSetting: 'RunnerSetting', statistics: 'RunnerScaleSetStatistic' },
  RunnerScaleSetSession: { runnerScaleSet: 'RunnerScaleSet', statistics: 'RunnerScaleSetStatistic' },
  RunnerScaleSetMessage: { statistics: 'RunnerScaleSetStatistic' },
  RunnerScaleSetJitRunnerConfig: { runner: 'RunnerReference' },
};

function check(shape: Shape, value: unknown, where: string, problems: string[]): void {
  if (Array.isArray(value)) return value.forEach((v, i) => check(shape, v, `${where}[${i}]`, problems));
  if (typeof value !== 'object' || value === null) return;
  const known = new Set<string>(GO_CLIENT_JSON_KEYS[shape]);
  for (const [key, child] of Object.entries(value)) {
    if (!known.has(key)) problems.push(`${where}.${key} is not a ${shape} key`);
    const nested = NESTED[shape]?.[key];
    if (nested) check(nested, child, `${where}.${key}`, problems);
  }
  if (shape === 'RunnerScaleSetStatistic') for (const k of known) if (!(k in value)) problems.push(`${where} lacks ${k}`);
}

const LIST_ITEM: Record<string, Shape> = {
  'get-runner-group': 'RunnerGroup',
  'list-scale-sets': 'RunnerScaleSet',
  'get-agents': 'RunnerReference',
  'get-acquirable-jobs': 'AcquirableJob',
};
const SINGLE: Record<string, Shape> = {
  'runner-registration': 'actionsServiceAdminConnection',
  'create-scale-set': 'RunnerScaleSet',
  'get-scale-set': 'RunnerScaleSet',
  'update-scale-set': 'RunnerScaleSet',
  'create-session': 'RunnerScaleSetSession',
  'refresh-session': 'RunnerScaleSetSession',
  'get-message': 'RunnerScaleSetMessage',
  'generate-scale-set-jitconfig': 'RunnerScaleSetJitRunnerConfig',
  'acquire-jobs': 'Int64List',
};

describe(`simulator JSON keys against ${GO_CLIENT_REVISION}`, () => {
  it('answers every exercised Actions-service call with keys the Go client declares', async () => {
    const rest = new OctokitGitHub({ credentialsName: 'default', apiUrl: sim.url, auth: { type: 'pat', token: 'ghp_simulated' } });
    const client = new ActionsServiceClient({ apiUrl: sim.url, scope, registrationToken: () => registrationTokenFor(rest, scope) });
    const set = await client.ensureScaleSet({ name: 'keys', runnerGroup: 'Default', labels: ['linux'] });
    await client.ensureScaleSet({ name: 'keys', runnerGroup: 'Default', labels: ['linux'] });
    sim.addRunnerGroup('keys-group');
    await client.moveScaleSet(set.id, 'keys-group');
    const session = await client.createSession(set.id, 'me');
    await client.refreshSession(set.id, session.sessionId);
    const job = sim.queueJob({ repository: 'acme/app', labels: ['keys'] });
    let last = 0;
    const seen = new Set<string>();
    const jit = await client.generateJitConfig(set.id, 'keys-r1', '_work');
    await client.findRunnerByName('keys-r1');
    await sim.startAgent({ jitConfig: jit.encodedJitConfig });
    for (let i = 0; i < 40 && !seen.has('JobCompleted'); i++) {
      const m = await client.getMessage({ scaleSetId: set.id, sessionId: session.sessionId, lastMessageId: last, maxCapacity: 2 });
      if (!m) continue;
      for (const j of m.jobs) seen.add(j.messageType);
      if (m.jobs.some((j) => j.messageType === 'JobAvailable')) {
        const requestId = sim.jobs().find((j) => j.id === job.id)!.requestId!;
        expect(await client.listAcquirableJobs(set.id)).toEqual([requestId]);
        await client.acquireJobs({ scaleSetId: set.id, sessionId: session.sessionId, requestIds: [requestId] });
      }
      await client.deleteMessage({ scaleSetId: set.id, sessionId: session.sessionId, messageId: m.messageId });
      last = m.messageId;
    }
    expect([...seen].sort()).toEqual(['JobAssigned', 'JobAvailable', 'JobCompleted', 'JobStarted']);

    const problems: string[] = [];
    const served = sim.servedResponses().filter((r) => r.key.startsWith('ACTIONS ') && r.status < 300 && r.body !== undefined);
    for (const r of served) {
      const op = r.key.slice('ACTIONS '.length);
      if (LIST_ITEM[op]) {
        check(op === 'get-acquirable-jobs' ? 'AcquirableJobList' : 'Int64List', r.body, op, problems);
        check(LIST_ITEM[op], (r.body as { value: unknown[] }).value, `${op}.value`, problems);
      } else if (SINGLE[op]) {
        check(SINGLE[op], r.body, op, problems);
        if (op === 'get-message') {
          for (const inner of JSON.parse((r.body as { body: string }).body) as { messageType: Shape }[]) check(inner.messageType, inner, `${op}.body`, problems);
        }
      } else {
        problems.push(`no recorded shape for ${op}`);
      }
    }
    expect(new Set(served.map((r) => r.key)).size).toBeGreaterThanOrEqual(12);
    expect(problems).toEqual([]);
  });
});
