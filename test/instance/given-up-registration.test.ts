/**
 * A create attempt cut off at its bound may still be waiting on GitHub. Meanwhile its successor,
 * an ordinary activity that another worker took, registers the runner and hands that
 * registration to the machine. When the cut-off attempt's mint finally reaches GitHub, the name
 * is taken (409). A live attempt would clear the leftover and mint again; this one was given up
 * on, and the leftover is its successor's: removing it would leave the machine's agent holding a
 * registration GitHub no longer has. Two workers here, each with its own create attempts and its
 * own GitHub clients (the real Octokit client, and the Actions-service client for a scale set's
 * runners), against the GitHub simulator, on the real server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { GitHubScope } from '../../github/port';
import { startSimulatedGitHub, type SimulatedGitHub } from '../github/support/simulated-github';
import { simulatorRegistry } from '../support/simulator-registry';
import { connectClient, eventually, instanceInput, startTestWorker, uniqueName, type TestWorker } from '../support/temporal';
import { scheduledActivities, startInstance, waitForStatus } from './helpers';

const INLINE_BOUND_MS = 600;
/** The cut-off attempt's mint reaches GitHub well after its successor's. */
const MINT_DELAY_MS = 4_000;

let client: Client;
let connection: Connection;
let github: SimulatedGitHub;
let workflows: TestWorker;
let activities: TestWorker;

beforeAll(async () => {
  ({ client, connection } = await connectClient());
  github = await startSimulatedGitHub({ recordResponses: true });
  const fakeDir = mkdtempSync(join(tmpdir(), 'runnerflow-given-up-'));
  // The inline attempt runs on the worker that takes workflow tasks; its successor on the other.
  // Each has the GitHub clients of its own, as a worker process builds them from its config.
  workflows = await startTestWorker({ fakeDir, activities: { github: simulatorRegistry(github.sim.url) }, fakeInlineMs: INLINE_BOUND_MS, roles: { activities: false } });
  activities = await startTestWorker({ taskQueue: workflows.taskQueue, fakeDir, activities: { github: simulatorRegistry(github.sim.url) }, fakeInlineMs: INLINE_BOUND_MS, roles: { workflows: false } });
});

afterAll(async () => {
  await Promise.all([workflows?.stop(), activities?.stop()]);
  await github?.sim.close();
  await connection?.close();
});

/**
 * Starts runner `name` with the mint (the simulator's operation `mint`, answered under `key`)
 * held back once, and waits until the cut-off attempt's mint has been answered and had time to
 * act on the answer. Returns the runner's state and the statuses of the mints answered.
 */
async function raceMints(name: string, mint: 'generate-jitconfig' | 'generate-scale-set-jitconfig', key: string, spec: Parameters<typeof instanceInput>[2] = {}) {
  github.sim.setFault({ kind: 'latency', ms: MINT_DELAY_MS, operation: mint, times: 1 });
  const handle = await startInstance(client, workflows.taskQueue, instanceInput(name, {}, spec));
  const state = await waitForStatus(handle, 'running');
  expect(await scheduledActivities(handle)).toEqual(['createInstance']);
  // The cut-off attempt's mint is answered after its successor's: the name is taken.
  const mints = () => github.sim.servedResponses().filter((r) => r.key === key).map((r) => r.status);
  await eventually(() => (mints().length >= 2 ? true : undefined), 10_000, "the cut-off attempt's mint answered");
  // Whatever that attempt would do next (look the name up, remove it) it would have done by now.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { state, mints: mints(), registered: github.sim.runners().filter((r) => r.name === name).map((r) => r.id) };
}

it('a cut-off attempt whose mint comes back "name taken" leaves the registration its successor made', async () => {
  const name = uniqueName('given-up').toLowerCase();
  const { state, mints, registered } = await raceMints(name, 'generate-jitconfig', 'POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig');
  expect(mints).toEqual([201, 409]);
  expect(registered).toEqual([state.githubRunnerId]);
  expect(github.sim.stats().callsByOperation['delete-runner'] ?? 0).toBe(0);
  expect(workflows.fake.instance(name)).toBeDefined();
});

it("a scale set's cut-off attempt whose mint comes back 'name taken' leaves the registration its successor made", async () => {
  const scope: GitHubScope = { kind: 'org', org: 'acme' };
  const actions = simulatorRegistry(github.sim.url).actions!('default', scope);
  const scaleSet = await actions.ensureScaleSet({ name: uniqueName('given-up-set').toLowerCase().slice(0, 40), runnerGroup: 'Default', labels: ['linux'] });
  const name = uniqueName('given-up-ss').toLowerCase();
  const { state, mints, registered } = await raceMints(name, 'generate-scale-set-jitconfig', 'ACTIONS generate-scale-set-jitconfig', { github: { credentials: 'default', scope }, scaleSet: { id: scaleSet.id, name: scaleSet.name } });
  expect(mints).toEqual([200, 409]);
  expect(registered).toEqual([state.githubRunnerId]);
  expect(github.sim.servedResponses().filter((r) => r.key === 'ACTIONS remove-agent')).toEqual([]);
});
