import { afterEach, beforeEach } from 'vitest';
import { OctokitGitHub, type GitHubAuth } from '../../../github/octokit-github';
import { startGitHubSimulator, type GitHubSimulator, type GitHubSimulatorOptions } from '../../../github/simulator/server';

export interface SimulatedGitHub {
  sim: GitHubSimulator;
  github: OctokitGitHub;
}

/** A simulator and the real Octokit client pointed at it. */
export async function startSimulatedGitHub(
  options: GitHubSimulatorOptions = {},
  auth: GitHubAuth = { type: 'pat', token: 'ghp_simulated' },
): Promise<SimulatedGitHub> {
  const sim = await startGitHubSimulator({ onError: () => undefined, ...options });
  const github = new OctokitGitHub({ credentialsName: 'sim', apiUrl: sim.url, auth, requestTimeoutMs: 5_000 });
  return { sim, github };
}

/** A fresh simulator and client for every test of the file, closed after each. */
export function useSimulatedGitHub(): SimulatedGitHub {
  const env = {} as SimulatedGitHub;
  beforeEach(async () => {
    Object.assign(env, await startSimulatedGitHub());
  });
  afterEach(async () => {
    await env.sim?.close();
  });
  return env;
}
