import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BootstrapInstance } from '../port';

const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const SIMULATOR_AGENT = resolve(REPO_ROOT, 'github/simulator/runner-agent.ts');

/**
 * The command when none is configured: the GitHub simulator's runner agent, which
 * stands in for `run.sh --jitconfig` in development and tests. Undefined when the
 * agent is not there (then a command must be configured).
 */
export function defaultRunnerCommand(agent = SIMULATOR_AGENT): string[] | undefined {
  if (!existsSync(agent)) return undefined;
  // Resolved here because the runner's working directory is outside the repository.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  // The agent reads its JIT config, callback URL and instance token from RUNNERFLOW_* variables:
  // secrets on a command line are visible to every local user through `ps`.
  return [process.execPath, '--import', tsx, agent];
}

export interface CommandValues {
  bootstrap: BootstrapInstance;
  workdir: string;
}

const PLACEHOLDER = /\{(jitconfig|name|workdir|callbackurl|instancetoken)\}/g;
const HAS_PLACEHOLDER = /\{(?:jitconfig|name|workdir|callbackurl|instancetoken)\}/;

/**
 * Substitutes the placeholders in every argument. A flag whose value turns out
 * empty (e.g. `--callback-url {callbackurl}` without a callback URL) is dropped
 * together with its value, so runners never see `--flag ""`.
 */
export function substituteCommand(template: readonly string[], { bootstrap, workdir }: CommandValues): string[] {
  const values: Record<string, string> = {
    jitconfig: bootstrap.jitConfig ?? '',
    name: bootstrap.name,
    workdir,
    callbackurl: bootstrap.callbackUrl ?? '',
    instancetoken: bootstrap.instanceToken ?? '',
  };
  const fill = (arg: string) => arg.replace(PLACEHOLDER, (_m, key: string) => values[key] ?? '');
  const emptied = (arg: string | undefined) => arg !== undefined && HAS_PLACEHOLDER.test(arg) && fill(arg) === '';
  const out: string[] = [];
  for (let i = 0; i < template.length; i++) {
    const arg = template[i]!;
    if (arg.startsWith('--') && emptied(template[i + 1])) {
      i++;
      continue;
    }
    out.push(fill(arg));
  }
  return out;
}
