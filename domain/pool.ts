import { jsonBytes } from './json-size';
import { z } from 'zod';
import { durationMs, durationMsWithFractions } from './duration';
import { SCALE_SET_NAME } from './scale-set';

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const githubScopeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('repo'), owner: z.string().min(1), repo: z.string().min(1) }).strict(),
  z.object({ kind: z.literal('org'), org: z.string().min(1) }).strict(),
  z.object({ kind: z.literal('enterprise'), enterprise: z.string().min(1) }).strict(),
]);


/** What a pool in `scaleSet` mode adds: the scale set it registers and how many runners it keeps without jobs. */
export const scaleSetSettingsSchema = z
  .object({
    /** The scale set's name (what `runs-on` names); the pool's name when absent. */
    name: z.string().regex(SCALE_SET_NAME, 'letters, digits, ".", "_" and "-", at most 100 characters, starting alphanumeric').optional(),
    /** Runners kept even with no job assigned (actions-runner-controller's minRunners). */
    minRunners: z.number().int().min(0).default(0),
  })
  .strict();

export const MAX_RUNNERS_PER_POOL = 5_000;

/** A pool's labels: how many, and how long each. A job's labels are checked against the same (api/webhooks). */
export const MAX_POOL_LABELS = 100;
export const MAX_LABEL_LENGTH = 256;

export const poolNameSchema = z.string().regex(NAME, 'lowercase letters, digits and dashes, at most 63 characters, starting and ending alphanumeric');

/**
 * A check across fields runs once those fields are valid themselves: `maxRunners: -1`
 * is one mistake, and an answer that also blamed the `minIdleRunners` nobody sent
 * would send the operator looking for a second. (zod runs an object's checks after
 * field issues it can continue past, such as a number out of range; never after one
 * it cannot, such as a wrong type.)
 */
function onceValid(...fields: string[]): { when: (payload: z.core.ParsePayload) => boolean } {
  return { when: (payload) => payload.issues.every((issue) => issue.continue === true && !fields.includes(String(issue.path?.[0]))) };
}

/** A pool's settings, with durations read by `duration` (see `poolSettingsSchema`). */
function settingsSchemaOf(duration: typeof durationMs) {
  return z
    .object({
      name: poolNameSchema,
      /** Which configured GitHub credentials to use, and for which repo/org/enterprise. */
      github: z.object({ credentials: z.string().min(1).default('default'), scope: githubScopeSchema }).strict(),
      labels: z.array(z.string().min(1).max(MAX_LABEL_LENGTH)).min(1).max(MAX_POOL_LABELS),
      provider: z.string().min(1),
      image: z.string().default(''),
      flavor: z.string().default(''),
      osType: z.enum(['linux', 'windows']).default('linux'),
      osArch: z.enum(['amd64', 'arm64', 'arm', 'i386']).default('amd64'),
      extraSpecs: z.record(z.string(), z.unknown()).default({}),
      minIdleRunners: z.number().int().min(0).default(0),
      /**
       * A pool's state (every runner, and the queued jobs) travels whole in each
       * continue-as-new and state query, both bounded by the server's 2 MB payload
       * limit. Measured: 10,000 runners carried 1.8 MB, too close to it; 5,000 carry
       * under 1 MB. More runners than that: more pools (routing spreads equal
       * priorities by free capacity).
       */
      maxRunners: z.number().int().min(0).max(MAX_RUNNERS_PER_POOL, `at most ${MAX_RUNNERS_PER_POOL} per pool: split a larger fleet into pools of equal priority`).default(10),
      bootstrapTimeout: duration.default(10 * 60_000),
      idleTimeout: duration.default(5 * 60_000),
      runnerPrefix: z.string().regex(/^[a-z0-9][a-z0-9-]{0,30}$/, 'lowercase letters, digits and dashes, at most 31 characters').optional(),
      runnerGroup: z.string().default('Default'),
      runnerGroupId: z.number().int().min(1).default(1),
      ephemeral: z.boolean().default(true),
      enabled: z.boolean().default(true),
      priority: z.number().int().min(0).max(1000).default(0),
      /** `webhook`: runners follow queued `workflow_job` webhooks. `scaleSet`: a GitHub runner scale set's listener drives them. */
      mode: z.enum(['webhook', 'scaleSet']).default('webhook'),
      scaleSet: scaleSetSettingsSchema.optional(),
    })
    .strict()
    .refine((p) => p.minIdleRunners <= p.maxRunners, { message: 'minIdleRunners must not exceed maxRunners', path: ['minIdleRunners'], ...onceValid('minIdleRunners', 'maxRunners') })
    .refine((p) => p.mode === 'scaleSet' || p.scaleSet === undefined, { message: 'scaleSet settings need mode: scaleSet', path: ['scaleSet'], ...onceValid('mode', 'scaleSet') })
    .refine((p) => (p.scaleSet?.minRunners ?? 0) <= p.maxRunners, { message: 'scaleSet.minRunners must not exceed maxRunners', path: ['scaleSet', 'minRunners'], ...onceValid('scaleSet', 'maxRunners') })
    .refine((p) => p.mode !== 'scaleSet' || p.ephemeral, { message: 'scale set runners are always ephemeral', path: ['ephemeral'], ...onceValid('mode', 'ephemeral') });
}

/**
 * A pool's settings as operators write them (durations as "10m" or milliseconds).
 *
 * The pool workflow checks every `updatePool` signal against this schema too
 * (workflows/pool-settings-input.ts), also when it replays a history. A change that refuses
 * settings it used to accept makes a running pool replay an old update as ignored, which
 * is other commands for the same history: such a change goes with a `patched` branch in
 * that check that keeps the old schema for runs begun before it (`earlierSignalSettingsSchemas`).
 */
export const poolSettingsSchema = settingsSchemaOf(durationMs);

/**
 * Largest `extraSpecs`, as JSON. Every runner's start input carries the pool's extra specs and a
 * pool starts runners in batches of 50 in one workflow task, whose commands share the server's
 * 2 MB payload limit: at about 40 KB the task fails for good and no runner is ever made.
 */
export const MAX_EXTRA_SPECS_BYTES = 16 * 1024;

function extraSpecsSizeIssue(extraSpecs: Record<string, unknown>): string | undefined {
  let bytes: number;
  try {
    bytes = jsonBytes(extraSpecs);
  } catch (err) {
    return `cannot be written as JSON (${(err as Error).message})`;
  }
  if (bytes <= MAX_EXTRA_SPECS_BYTES) return undefined;
  return `is ${bytes} bytes as JSON; at most ${MAX_EXTRA_SPECS_BYTES} (16 KiB), since every runner of the pool carries a copy`;
}

/**
 * Largest share of the rest of the settings every runner's start input carries (labels, image,
 * flavor, runner group, GitHub scope and credentials, scale set name), as JSON. With the
 * extra specs' 16 KiB a batch of 50 starts stays near 1.2 MB, under the 2 MB the server takes;
 * a 700 KB image made three starts too large for good. Real values are a few hundred bytes.
 */
export const MAX_RUNNER_SETTINGS_BYTES = 8 * 1024;

/** The issue, named at the largest of the fields every runner carries, so the caller sees where. */
function runnerSettingsSizeIssue(p: PoolSettings): { path: string; message: string } | undefined {
  const carried: Record<string, unknown> = {
    labels: p.labels,
    image: p.image,
    flavor: p.flavor,
    runnerGroup: p.runnerGroup,
    github: p.github,
    ...(p.scaleSet?.name !== undefined ? { scaleSet: p.scaleSet.name } : {}),
  };
  const total = jsonBytes(carried);
  if (total <= MAX_RUNNER_SETTINGS_BYTES) return undefined;
  const [largest] = Object.entries(carried)
    .map(([field, value]) => [field, jsonBytes(value)] as const)
    .sort((a, b) => b[1] - a[1])[0]!;
  return {
    path: largest,
    message: `labels, image, flavor, runnerGroup, github and the scale set name come to ${total} bytes as JSON, ${largest} the largest; at most ${MAX_RUNNER_SETTINGS_BYTES} (8 KiB), since every runner of the pool carries a copy`,
  };
}

/** Settings plus the `extraSpecs` size cap. */
function withExtraSpecsCap<S extends z.ZodType<PoolSettings>>(schema: S) {
  return schema.superRefine((p, ctx) => {
    const issue = extraSpecsSizeIssue(p.extraSpecs);
    if (issue) ctx.addIssue({ code: 'custom', path: ['extraSpecs'], message: issue });
  });
}

/** Settings plus the cap on the rest of what every runner carries. */
function withRunnerSettingsCap<S extends z.ZodType<PoolSettings>>(schema: S) {
  return schema.superRefine((p, ctx) => {
    const issue = runnerSettingsSizeIssue(p);
    if (issue) ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.message });
  });
}

/**
 * The settings a pool is given from now on, through the API, the config file or an
 * `updatePool` signal: the pool settings plus the size caps on what every runner carries. The
 * pool workflow checks its signals against each cap only behind a `patched` branch, so a
 * history that took larger settings replays as it ran (see above).
 */
export const newPoolSettingsSchema = withRunnerSettingsCap(withExtraSpecsCap(poolSettingsSchema));

/**
 * What `updatePool` signals were checked against before each of the checks above came in,
 * by the checks then in force: durations with fractions of a millisecond were taken, the size
 * caps came one after the other. Built on first use: only pool workflows replaying such a
 * history need them.
 */
export function earlierSignalSettingsSchemas() {
  const fractions = settingsSchemaOf(durationMsWithFractions);
  return {
    none: fractions,
    extraSpecs: withExtraSpecsCap(fractions),
    all: withRunnerSettingsCap(withExtraSpecsCap(fractions)),
  };
}

/** What a pool names that the installation must have: a provider and GitHub credentials of those names. */
export function poolReferenceIssues(
  settings: Pick<PoolSettings, 'provider' | 'github' | 'runnerGroup'>,
  configured: { providers: readonly string[]; credentials: readonly string[] },
): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  // Checked here, not in the schema: pools that took a blank one before still replay their settings.
  if (settings.runnerGroup.trim() === '') issues.push({ path: 'runnerGroup', message: 'must name a runner group (GitHub\'s own is "Default")' });
  if (!configured.providers.includes(settings.provider)) {
    issues.push({ path: 'provider', message: `no provider named "${settings.provider}" is configured (configured: ${configured.providers.join(', ') || 'none'})` });
  }
  if (!configured.credentials.includes(settings.github.credentials)) {
    issues.push({
      path: 'github.credentials',
      message: `no GitHub credentials named "${settings.github.credentials}" are configured (configured: ${configured.credentials.join(', ') || 'none'})`,
    });
  }
  return issues;
}

export type PoolSettingsInput = z.input<typeof poolSettingsSchema>;
export type PoolSettings = z.output<typeof poolSettingsSchema>;
export type GitHubScopeSettings = z.output<typeof githubScopeSchema>;

/** Label matching as GitHub does it: case-insensitive, `self-hosted` implied. */
export function poolMatchesLabels(pool: Pick<PoolSettings, 'labels'>, jobLabels: readonly string[]): boolean {
  const have = new Set(pool.labels.map((l) => l.toLowerCase()));
  have.add('self-hosted');
  return jobLabels.every((l) => have.has(l.toLowerCase()));
}

/**
 * Whether runners registered at `scope` can take a job of `repository` (owner/repo):
 * a repository's runners serve only it, an organisation's serve its repositories,
 * an enterprise's cannot be told apart by repository name. Unknown repository: yes.
 */
export function scopeCoversRepository(scope: GitHubScopeSettings, repository: string | undefined): boolean {
  if (!repository) return true;
  const [owner = '', repo = ''] = repository.toLowerCase().split('/');
  switch (scope.kind) {
    case 'repo':
      return scope.owner.toLowerCase() === owner && scope.repo.toLowerCase() === repo;
    case 'org':
      return scope.org.toLowerCase() === owner;
    case 'enterprise':
      return true;
  }
}
