/**
 * What liveness checks can find wrong with a running instance, and how each
 * finding reads to an operator. The reconciler (activities/liveness-activities.ts)
 * reports findings; the instance decides what they mean for it, because only the
 * instance knows whether its runner is busy.
 */

export const HEALTH_FINDINGS = ['machine_gone', 'machine_stopped', 'machine_error', 'runner_offline', 'runner_missing'] as const;
export type HealthFinding = (typeof HEALTH_FINDINGS)[number];

/** The words that end up in the `pending_delete` transition's reason. */
export const FINDING_REASONS: Readonly<Record<HealthFinding, string>> = {
  machine_gone: 'machine gone',
  machine_stopped: 'machine stopped',
  machine_error: 'machine in error',
  runner_offline: 'runner offline',
  runner_missing: 'runner no longer registered at GitHub',
};

/** Findings about the machine itself, as opposed to what GitHub says of the runner. */
export function isMachineFinding(finding: HealthFinding): boolean {
  return finding === 'machine_gone' || finding === 'machine_stopped' || finding === 'machine_error';
}

export type MachineSeen = 'running' | 'stopped' | 'error' | 'unknown' | 'gone';
export type RunnerSeen = 'online' | 'offline' | 'missing' | 'unknown';

/** One look at a single instance: its machine at the provider and its runner at GitHub. */
export interface HealthObservation {
  machine: MachineSeen;
  runner: RunnerSeen;
  /** What GitHub says; a runner GitHub thinks busy is never treated as idle. */
  busy: boolean;
  /** A provider or GitHub error that made part of the look inconclusive. */
  error?: string;
}

export function machineFinding(machine: MachineSeen): HealthFinding | undefined {
  switch (machine) {
    case 'gone':
      return 'machine_gone';
    case 'stopped':
      return 'machine_stopped';
    case 'error':
      return 'machine_error';
    default:
      return undefined;
  }
}

export function runnerFinding(runner: RunnerSeen): HealthFinding | undefined {
  if (runner === 'offline') return 'runner_offline';
  if (runner === 'missing') return 'runner_missing';
  return undefined;
}

/**
 * What is still wrong after a second look. Either side is enough evidence: a provider
 * that says "running" for a dead machine is caught by GitHub seeing the runner offline,
 * and GitHub's status lags minutes behind a machine the provider already reports gone.
 * "unknown" (a call failed) is no evidence either way. Runner-side evidence only counts
 * once the runner has registered: before that, offline is simply not yet started.
 */
export function stillDead(seen: HealthObservation, registered: boolean): HealthFinding | undefined {
  return machineFinding(seen.machine) ?? (registered ? runnerFinding(seen.runner) : undefined);
}
