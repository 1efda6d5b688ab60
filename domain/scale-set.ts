/**
 * The rules of a scale-set pool, free of Temporal and HTTP so they can be read
 * in one place.
 */
import type { PoolSettings } from './pool';

/** GitHub's limits on a scale set name: what `runs-on` uses, so no spaces or slashes. */
export const SCALE_SET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/**
 * The labels a scale set is created with: its name first, then the extra labels, each once, as
 * actions-runner-controller makes them. Jobs reach a scale set through its labels, so without its
 * name among them `runs-on: <name>` finds no runner. GitHub compares labels without case.
 */
export function scaleSetLabels(name: string, extra: readonly string[]): string[] {
  const seen = new Set<string>();
  return [name, ...extra].filter((label) => {
    const key = label.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Whether GitHub hands a job to a scale set with these labels: the job names one label at least,
 * and every label it names is one of the scale set's (`self-hosted` aside, which every self-hosted
 * runner answers to). GitHub compares labels without case.
 */
export function scaleSetTakesJob(scaleSetLabels: readonly string[], jobLabels: readonly string[]): boolean {
  const wanted = jobLabels.map((l) => l.toLowerCase()).filter((l) => l !== 'self-hosted');
  if (wanted.length === 0) return false;
  const have = new Set(scaleSetLabels.map((l) => l.toLowerCase()));
  return wanted.every((l) => have.has(l));
}

/** Labels as GitHub compares them: without case, order or repeats. */
const labelSet = (labels: readonly string[]): string => [...new Set(labels.map((l) => l.toLowerCase()))].sort().join('\n');

/**
 * The labels of a scale set found at GitHub, when they are not the ones its pool would have made
 * it with: GitHub sets them only when it creates a scale set, so jobs that name a label the pool
 * has and the scale set lacks never reach it. Undefined when they match, or are not known.
 */
export function foreignLabels(found: readonly string[] | undefined, name: string, poolLabels: readonly string[]): string[] | undefined {
  if (found === undefined) return undefined;
  return labelSet(found) === labelSet(scaleSetLabels(name, poolLabels)) ? undefined : [...found];
}

export type ScaleSetDifference = 'runner_group' | 'name' | 'labels';

/**
 * What of a scale set at GitHub is not as its pool says, from its listener's view: `runner_group`
 * while a move is not done, `name` while a rename is not done (a group or name not known, from a
 * listener that predates keeping it, is not counted), `labels` when it was found with labels
 * other than the pool's.
 */
export function scaleSetDifferences(view: {
  runnerGroup?: string;
  runnerGroupAtGitHub?: string;
  name?: string;
  nameAtGitHub?: string;
  labelsAtGitHub?: string[];
}): ScaleSetDifference[] {
  const differs: ScaleSetDifference[] = [];
  if (view.runnerGroup !== undefined && view.runnerGroupAtGitHub !== undefined && view.runnerGroup !== view.runnerGroupAtGitHub) differs.push('runner_group');
  if (view.name !== undefined && view.nameAtGitHub !== undefined && view.name !== view.nameAtGitHub) differs.push('name');
  if (view.labelsAtGitHub !== undefined) differs.push('labels');
  return differs;
}

/** The scale set's name: what `runs-on` names. */
export const scaleSetNameOf = (settings: Pick<PoolSettings, 'name' | 'scaleSet'>): string => settings.scaleSet?.name ?? settings.name;

/**
 * actions-runner-controller's rule (cmd/ghalistener/worker/worker.go,
 * HandleDesiredRunnerCount): `min(minRunners + totalAssignedJobs, maxRunners)`.
 * Assigned jobs include running ones, so busy runners are part of the count.
 */
export function desiredRunnerCount(minRunners: number, maxRunners: number, totalAssignedJobs: number): number {
  return Math.max(0, Math.min(minRunners + Math.max(0, totalAssignedJobs), maxRunners));
}

/** Owner name of our sessions: tells operators (and GitHub's UI) which installation and pool listens. */
export const sessionOwnerName = (controllerId: string, pool: string): string => `runnerflow/${controllerId}/${pool}`;

/** What names a pool's scale set at GitHub. All but the runner group and the name are fixed under a running pool. */
export interface ScaleSetIdentity {
  name: string;
  runnerGroup: string;
  credentials: string;
  scope: PoolSettings['github']['scope'];
  /** As GitHub set them when it created the scale set (after its name). */
  labels: string[];
}

export const scaleSetIdentityOf = (settings: PoolSettings): ScaleSetIdentity => ({
  name: scaleSetNameOf(settings),
  runnerGroup: settings.runnerGroup,
  credentials: settings.github.credentials,
  scope: settings.github.scope,
  labels: settings.labels,
});

/** A field of a scale-set pool that names its scale set at GitHub, and why it is fixed. */
export interface ScaleSetFieldChange {
  path: string;
  message: string;
}

const sameScope = (a: ScaleSetIdentity['scope'], b: ScaleSetIdentity['scope']): boolean =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

/**
 * What `next` would change of the scale set a pool registered (`current`) that cannot change in
 * place. The listener holds a session on that scale set, and its runners are registered to it: a
 * scale set of another scope or credentials is another scale set, and GitHub sets a scale set's
 * labels only when it creates it. Neither the runner group nor the name is among these: the
 * listener moves and renames the scale set, as actions-runner-controller does, keeping its id,
 * session and runners. Every other setting changes in place too.
 */
export function scaleSetChanges(current: ScaleSetIdentity, next: PoolSettings): ScaleSetFieldChange[] {
  if (next.mode !== 'scaleSet') return [];
  const to = scaleSetIdentityOf(next);
  const changes: ScaleSetFieldChange[] = [];
  if (to.credentials !== current.credentials) changes.push({ path: 'github.credentials', message: `is "${to.credentials}"; the scale set is reached with "${current.credentials}"` });
  if (!sameScope(to.scope, current.scope)) changes.push({ path: 'github.scope', message: 'differs from the scope the scale set is registered in' });
  if (labelSet(to.labels) !== labelSet(current.labels)) changes.push({ path: 'labels', message: 'differ from the labels GitHub gave the scale set when it was created' });
  return changes;
}
