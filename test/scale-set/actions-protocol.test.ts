import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionsServiceClient } from '../../github/actions/client';
import { isActionsError } from '../../github/actions/port';
import { OctokitGitHub } from '../../github/octokit-github';
import type { GitHubScope } from '../../github/port';
import { registrationTokenFor } from '../../github/registry';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';

const scope: GitHubScope = { kind: 'org', org: 'acme' };
let sim: GitHubSimulator;
let client: ActionsServiceClient;

function newClient(): ActionsServiceClient {
  const rest = new OctokitGitHub({ credentialsName: 'default', apiUrl: sim.url, auth: { type: 'pat', token: 'ghp_simulated' } });
  return new ActionsServiceClient({ apiUrl: sim.url, scope, registrationToken: () => registrationTokenFor(rest, scope) });
}

beforeAll(async () => {
  sim = await startGitHubSimulator({ longPollMs: 300, jobDurationMs: 300, recordResponses: true, onError: () => undefined });
  client = newClient();
});
afterAll(async () => {
  await sim.close();
});

const requestIdOf = (jobId: number): number => sim.jobs().find((j) => j.id === jobId)!.requestId!;

async function nextMessage(scaleSetId: number, sessionId: string, lastMessageId: number) {
  for (let i = 0; i < 20; i++) {
    const m = await client.getMessage({ scaleSetId, sessionId, lastMessageId, maxCapacity: 4 });
    if (m) return m;
  }
  throw new Error('no message');
}

describe('the Actions service protocol against the simulator', () => {
  it('gets or creates a scale set by name, holds one session, and carries a job from available to completed', async () => {
    const created = await client.ensureScaleSet({ name: 'ci-large', runnerGroup: 'Default', labels: ['linux'] });
    expect(created.id).toBeGreaterThan(0);
    expect((await client.ensureScaleSet({ name: 'ci-large', runnerGroup: 'Default', labels: ['linux'] })).id).toBe(created.id);

    const session = await client.createSession(created.id, 'owner-a');
    expect(session.statistics?.totalAssignedJobs).toBe(0);
    // Nothing waiting: the service answers 204 with no body.
    expect(await client.listAcquirableJobs(created.id)).toEqual([]);
    await expect(newClient().createSession(created.id, 'owner-b')).rejects.toSatisfy((e) => isActionsError(e, 'session_conflict'));

    const job = sim.queueJob({ repository: 'acme/app', labels: ['ci-large'] });
    const available = await nextMessage(created.id, session.sessionId, 0);
    // The scale set's messages name the job by its runner request id, not the job id of its webhooks.
    const requestId = requestIdOf(job.id);
    expect(requestId).not.toBe(job.id);
    expect(available.jobs).toMatchObject([{ messageType: 'JobAvailable', runnerRequestId: requestId }]);
    expect(available.statistics?.totalAvailableJobs).toBe(1);
    expect(sim.scaleSetMaxCapacity(created.id)).toBe(4);
    expect(await client.listAcquirableJobs(created.id)).toEqual([requestId]);
    // A job id is no request id.
    expect(await client.acquireJobs({ scaleSetId: created.id, sessionId: session.sessionId, requestIds: [job.id] })).toEqual([]);
    expect(await client.acquireJobs({ scaleSetId: created.id, sessionId: session.sessionId, requestIds: [requestId] })).toEqual([requestId]);
    expect(await client.listAcquirableJobs(created.id)).toEqual([]);
    expect(await client.acquireJobs({ scaleSetId: created.id, sessionId: session.sessionId, requestIds: [requestId] })).toEqual([]);
    await client.deleteMessage({ scaleSetId: created.id, sessionId: session.sessionId, messageId: available.messageId });

    const assigned = await nextMessage(created.id, session.sessionId, available.messageId);
    expect(assigned.jobs[0]?.messageType).toBe('JobAssigned');
    expect(assigned.statistics?.totalAssignedJobs).toBe(1);

    const jit = await client.generateJitConfig(created.id, 'ci-large-r1', '_work');
    await sim.startAgent({ jitConfig: jit.encodedJitConfig });
    const started = await nextMessage(created.id, session.sessionId, assigned.messageId);
    expect(started.jobs[0]).toMatchObject({ messageType: 'JobStarted', runnerName: 'ci-large-r1', runnerId: jit.runnerId });
    expect(await client.removeRunner(jit.runnerId)).toBe('busy');
    const completed = await nextMessage(created.id, session.sessionId, started.messageId);
    expect(completed.jobs[0]).toMatchObject({ messageType: 'JobCompleted', result: 'succeeded' });
    expect(completed.statistics?.totalAssignedJobs).toBe(0);
    expect(await client.removeRunner(jit.runnerId)).toBe('not_found');

    expect(await client.deleteSession(created.id, session.sessionId)).toBe('deleted');
    expect(await client.deleteScaleSet(created.id)).toBe('deleted');
    expect(await client.deleteScaleSet(created.id)).toBe('not_found');
  });

  it('hands up a message of another type than job messages with its statistics and no jobs; it stays in the queue until deleted', async () => {
    const set = await client.ensureScaleSet({ name: 'ci-foreign', runnerGroup: 'Default', labels: ['linux'] });
    const session = await client.createSession(set.id, 'owner-a');
    sim.setFault({ kind: 'foreign-message', messageType: 'RunnerScaleSetMaintenance', times: 1 });
    const foreign = await nextMessage(set.id, session.sessionId, 0);
    expect(foreign).toMatchObject({ unsupportedType: 'RunnerScaleSetMaintenance', jobs: [] });
    expect(foreign.statistics?.totalAvailableJobs).toBe(0);
    // Not acknowledged: the queue hands it out again, ahead of what came after it.
    const job = sim.queueJob({ repository: 'acme/app', labels: ['ci-foreign'] });
    expect((await nextMessage(set.id, session.sessionId, 0)).messageId).toBe(foreign.messageId);
    await client.deleteMessage({ scaleSetId: set.id, sessionId: session.sessionId, messageId: foreign.messageId });
    const offer = await nextMessage(set.id, session.sessionId, 0);
    expect(offer.unsupportedType).toBeUndefined();
    expect(offer.jobs).toMatchObject([{ messageType: 'JobAvailable', runnerRequestId: requestIdOf(job.id) }]);
    expect(await client.deleteSession(set.id, session.sessionId)).toBe('deleted');
    expect(await client.deleteScaleSet(set.id)).toBe('deleted');
  });

  it('survives an expired queue token and admin token, and reports a lost session and a redelivery', async () => {
    const set = await client.ensureScaleSet({ name: 'faults', runnerGroup: 'Default', labels: [] });
    const session = await client.createSession(set.id, 'owner');
    sim.queueJob({ repository: 'acme/app', labels: ['faults'] });

    sim.setFault({ kind: 'expire-token', operation: 'get-message', times: 1 });
    const first = await nextMessage(set.id, session.sessionId, 0);
    sim.setFault({ kind: 'expire-token', operation: 'generate-scale-set-jitconfig', times: 1 });
    expect((await client.generateJitConfig(set.id, 'faults-r1', '_work')).runnerId).toBeGreaterThan(0);

    await client.deleteMessage({ scaleSetId: set.id, sessionId: session.sessionId, messageId: first.messageId });
    sim.setFault({ kind: 'redeliver-message', times: 1 });
    const again = await nextMessage(set.id, session.sessionId, first.messageId);
    expect(again.messageId).toBe(first.messageId);

    sim.setFault({ kind: 'lose-session', times: 1 });
    await expect(client.getMessage({ scaleSetId: set.id, sessionId: session.sessionId, lastMessageId: first.messageId, maxCapacity: 1 })).rejects.toSatisfy((e) =>
      isActionsError(e, 'not_found'),
    );
    // The lost session no longer blocks a new one.
    expect((await client.createSession(set.id, 'owner')).sessionId).not.toBe(session.sessionId);

    sim.setFault({ kind: 'server-error', operation: 'list-scale-sets', status: 503, times: 1 });
    await expect(client.ensureScaleSet({ name: 'faults', runnerGroup: 'Default', labels: [] })).rejects.toMatchObject({ retryable: true, status: 503 });
    await expect(client.ensureScaleSet({ name: 'x', runnerGroup: 'no-such-group', labels: [] })).rejects.toMatchObject({ retryable: false, kind: 'not_found' });
  });

  it('moves a scale set to another runner group, keeping its id, session and labels, and again is a no-op', async () => {
    const group = sim.addRunnerGroup('moving-to');
    const set = await client.ensureScaleSet({ name: 'mover', runnerGroup: 'Default', labels: ['linux'] });
    const session = await client.createSession(set.id, 'owner');
    expect(await client.moveScaleSet(set.id, 'moving-to')).toBe('moved');
    const moved = sim.scaleSets().find((s) => s.id === set.id);
    expect(moved).toMatchObject({ runnerGroupId: group, runnerGroupName: 'moving-to', labels: ['mover', 'linux'] });
    expect(moved?.session?.sessionId).toBe(session.sessionId);
    // Found by name in its new group, no longer in its old one.
    expect((await client.ensureScaleSet({ name: 'mover', runnerGroup: 'moving-to', labels: ['linux'] })).id).toBe(set.id);
    // A retry after a lost answer changes nothing.
    expect(await client.moveScaleSet(set.id, 'moving-to')).toBe('unchanged');
    expect(sim.stats().actionsCalls['update-scale-set']).toBe(1);

    // Refused for good: no such group; a scale set of this name in the group already.
    await expect(client.moveScaleSet(set.id, 'no-such-group')).rejects.toMatchObject({ retryable: false, kind: 'not_found', message: 'runner group "no-such-group" not found' });
    const namesake = await client.ensureScaleSet({ name: 'mover', runnerGroup: 'Default', labels: ['linux'] });
    expect(namesake.id).not.toBe(set.id);
    await expect(client.moveScaleSet(namesake.id, 'moving-to')).rejects.toMatchObject({ retryable: false, status: 409 });
    expect(await client.deleteScaleSet(namesake.id)).toBe('deleted');
    expect(await client.moveScaleSet(namesake.id, 'moving-to')).toBe('scale_set_gone');
    sim.setFault({ kind: 'server-error', operation: 'update-scale-set', status: 503, times: 1 });
    await expect(client.moveScaleSet(set.id, 'Default')).rejects.toMatchObject({ retryable: true, status: 503 });
    expect(await client.deleteScaleSet(set.id)).toBe('deleted');
  });

  it('renames a scale set in place, keeping its id and session, with runs-on reaching it by the new name, and again is a no-op', async () => {
    const set = await client.ensureScaleSet({ name: 'old-name', runnerGroup: 'Default', labels: ['linux'] });
    const session = await client.createSession(set.id, 'owner');
    const calls = sim.stats().actionsCalls['update-scale-set'] ?? 0;
    expect(await client.renameScaleSet(set.id, 'new-name')).toBe('renamed');
    const renamed = sim.scaleSets().find((s) => s.id === set.id);
    expect(renamed).toMatchObject({ name: 'new-name', runnerGroupName: 'Default', labels: ['new-name', 'linux'] });
    expect(renamed?.session?.sessionId).toBe(session.sessionId);
    // Found by its new name; none is left by the old one.
    expect((await client.ensureScaleSet({ name: 'new-name', runnerGroup: 'Default', labels: ['linux'] })).id).toBe(set.id);
    expect(sim.scaleSets().filter((s) => s.name === 'old-name')).toHaveLength(0);
    // A retry after a lost answer changes nothing.
    expect(await client.renameScaleSet(set.id, 'new-name')).toBe('unchanged');
    expect(sim.stats().actionsCalls['update-scale-set']).toBe(calls + 1);

    // Refused for good: a scale set of that name in the group already.
    const namesake = await client.ensureScaleSet({ name: 'taken-name', runnerGroup: 'Default', labels: [] });
    await expect(client.renameScaleSet(set.id, 'taken-name')).rejects.toMatchObject({ retryable: false, status: 409 });
    expect(sim.scaleSets().find((s) => s.id === set.id)?.name).toBe('new-name');
    expect(await client.deleteScaleSet(namesake.id)).toBe('deleted');
    expect(await client.renameScaleSet(namesake.id, 'anything')).toBe('scale_set_gone');
    sim.setFault({ kind: 'server-error', operation: 'update-scale-set', status: 503, times: 1 });
    await expect(client.renameScaleSet(set.id, 'taken-name')).rejects.toMatchObject({ retryable: true, status: 503 });
    expect(await client.renameScaleSet(set.id, 'taken-name')).toBe('renamed');
    expect(await client.deleteScaleSet(set.id)).toBe('deleted');
  });

  it('takes a session the service answers "expired" on close as gone', async () => {
    const set = await client.ensureScaleSet({ name: 'expiring', runnerGroup: 'Default', labels: [] });
    const session = await client.createSession(set.id, 'owner');
    sim.setFault({ kind: 'session-expired-on-delete', times: 1 });
    expect(await client.deleteSession(set.id, session.sessionId)).toBe('not_found');
    // Another 400 is still an error.
    const next = await client.createSession(set.id, 'owner');
    sim.setFault({ kind: 'server-error', operation: 'delete-session', status: 400, times: 1 });
    await expect(client.deleteSession(set.id, next.sessionId)).rejects.toMatchObject({ retryable: false, status: 400 });
  });

  it("creates a scale set with its name as its first label, and the service routes jobs by the scale set's labels", async () => {
    await client.ensureScaleSet({ name: 'Labelled', runnerGroup: 'Default', labels: ['labelled', 'linux', 'LINUX', 'gpu'] });
    expect(sim.scaleSets().find((s) => s.name === 'Labelled')?.labels).toEqual(['Labelled', 'linux', 'gpu']);

    // A scale set made by another client without its name among its labels gets no job by its name.
    const admin = await adminConnection();
    const made = await fetch(`${admin.url}_apis/runtime/runnerscalesets?api-version=6.0-preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bare', runnerGroupId: 1, labels: [{ name: 'bare-gpu', type: 'System' }], RunnerSetting: { ephemeral: true, isElastic: true, disableUpdate: true } }),
    });
    const bare = (await made.json()) as { id: number };
    const byName = sim.queueJob({ repository: 'acme/app', labels: ['bare'] });
    const byLabel = sim.queueJob({ repository: 'acme/app', labels: ['bare-gpu'] });
    const offered = (id: number) => sim.jobs().find((j) => j.id === id)?.scaleSetId;
    expect(offered(byName.id)).toBeUndefined();
    expect(offered(byLabel.id)).toBe(bare.id);
  });
});

/** The registration exchange by hand, for calls the client does not make. */
async function adminConnection(): Promise<{ url: string; token: string }> {
  const res = await fetch(`${sim.url}/actions/runner-registration`, {
    method: 'POST',
    headers: { authorization: `RemoteAuth ${'A'.repeat(29)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://github.com/acme', runner_event: 'register' }),
  });
  return (await res.json()) as { url: string; token: string };
}
