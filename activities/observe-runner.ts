/**
 * The instance's own second look at a liveness finding: one provider GetInstance
 * and one GitHub lookup for this runner. Only instances that were reported dead
 * call it (after their grace period), so its cost does not grow with idle runners.
 */
import type { GitHubPort } from '../github/port';
import type { HealthObservation, MachineSeen, RunnerSeen } from '../domain/liveness';
import { isNotFound, type ProviderCallContext, type ProviderPort } from '../providers/port';
import { reportErrorText } from './failures';
import type { DeleteInstanceArgs, RemoveRunnerArgs } from './instance-activities';

export type ObserveRunnerArgs = DeleteInstanceArgs & Pick<RemoveRunnerArgs, 'github' | 'githubRunnerId'>;

export interface ObserveRunnerDeps {
  controllerId: string;
  provider(name: string): ProviderPort;
  github: { get(credentials: string): GitHubPort };
  /** The extra specs the runner's machine was made with, for a provider that wants them on every call. */
  extraSpecsOf?(target: ProviderPort, name: string): Promise<Pick<ProviderCallContext, 'extraSpecs'>>;
}

export function createObserveRunner(deps: ObserveRunnerDeps) {
  /** Never throws for a provider or GitHub failure: that side reads "unknown", which is no evidence of death. */
  return async function observeRunner(args: ObserveRunnerArgs): Promise<HealthObservation> {
    const errors: string[] = [];
    const target = deps.provider(args.provider);
    const machine = await (deps.extraSpecsOf?.(target, args.name) ?? Promise.resolve({}))
      .then((specs) => target.getInstance(args.providerId ?? args.name, { controllerId: deps.controllerId, poolId: args.pool, ...specs, timeoutMs: 30_000 }))
      .then((found): MachineSeen => found.status)
      .catch((err: unknown): MachineSeen => {
        if (isNotFound(err)) return 'gone';
        errors.push(`provider: ${reportErrorText(err)}`);
        return 'unknown';
      });
    let runner: RunnerSeen = 'unknown';
    let busy = false;
    try {
      const found = await deps.github.get(args.github.credentials).findRunnerByName(args.github.scope, args.name);
      runner = found ? found.status : 'missing';
      busy = found?.busy ?? false;
    } catch (err) {
      errors.push(`github: ${reportErrorText(err)}`);
    }
    return { machine, runner, busy, ...(errors.length > 0 ? { error: errors.join('; ') } : {}) };
  };
}
