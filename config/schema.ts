/**
 * The runnerflow configuration file (YAML, path in RUNNERFLOW_CONFIG).
 * Secrets are never inline: a secret field names an environment variable or a file.
 */
import { z } from 'zod';
import { durationMs } from '../domain/duration';
import { newPoolSettingsSchema } from '../domain/pool';
import { timingsOverrideSchema } from '../domain/timings';
import { RECENT_REPOSITORIES_KEPT } from '../workflows/recent-repositories';

export const secretRefSchema = z.union([z.object({ env: z.string().min(1) }).strict(), z.object({ file: z.string().min(1) }).strict()], {
  // A config file is read by more people and tools than the secrets it needs: the value itself never goes in it.
  error: (issue) =>
    typeof issue.input === 'string'
      ? 'a secret is never written in the config: use { env: NAME } (an environment variable) or { file: PATH } (a file holding it)'
      : 'expected { env: NAME } or { file: PATH }, with a non-empty NAME or PATH',
});

export interface ListenAddress {
  host: string;
  port: number;
}

/** Parses "host:port", "[v6]:port", ":port" or "port". */
export function parseListen(listen: string): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen) ?? /^()()(\d+)$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`listen address "${listen}" is not host:port with a port from 0 to 65535 (example: 127.0.0.1:8080)`);
  }
  return { host: match[1] || match[2] || '127.0.0.1', port };
}

const listenSchema = z.string().superRefine((listen, ctx) => {
  try {
    parseListen(listen);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});
export type SecretRef = z.infer<typeof secretRefSchema>;

const githubCredentialsSchema = z
  .object({
    name: z.string().min(1).default('default'),
    /** REST API base, e.g. https://ghes.example.com/api/v3 for GitHub Enterprise Server. */
    apiUrl: z.string().url().default('https://api.github.com'),
    /** Web base used to build runner registration URLs. */
    webUrl: z.string().url().default('https://github.com'),
    auth: z.discriminatedUnion('type', [
      z.object({ type: z.literal('pat'), token: secretRefSchema }).strict(),
      z
        .object({
          type: z.literal('app'),
          appId: z.union([z.number().int(), z.string().min(1)]),
          installationId: z.number().int(),
          privateKey: secretRefSchema,
        })
        .strict(),
    ]),
  })
  .strict();

/** A local activity longer than this would hold the runner's workflow task past the point where the SDK must extend it. */
export const INLINE_ATTEMPT_MAX_MS = 8_000;

/**
 * How long a provider's create (`inlineCreateTimeout`) or delete (`inlineDeleteTimeout`)
 * usually takes at most. The first attempt then runs inline: a local activity in the
 * worker that runs the runner's workflow task, which spares the server an activity
 * task and a workflow task per runner. A create is tried inline in the runner's first
 * task; a graceful delete in the task that decides the runner leaves (an ephemeral
 * runner's job is done), whose answer then closes the workflow. An attempt cut off at
 * this bound is retried as an ordinary activity, with the usual backoff and
 * heartbeats. While it runs, the workflow takes no signal: a forceDelete that arrives
 * then is acted on when the attempt ends. 0 turns it off.
 */
const inlineAttemptTimeout = (fallbackMs: number) =>
  durationMs.pipe(z.number().max(INLINE_ATTEMPT_MAX_MS, { message: `at most ${INLINE_ATTEMPT_MAX_MS} ms: an inline attempt must fit in one workflow task` })).default(fallbackMs);

const localProcessProviderSchema = z
  .object({
    type: z.literal('local-process'),
    name: z.string().min(1),
    /** Where each instance gets its working directory. */
    workDir: z.string().default('.runnerflow/instances'),
    /**
     * Command run per instance; `{jitconfig}`, `{name}`, `{workdir}` are substituted.
     * For a real actions/runner install: ["/opt/actions-runner/run.sh"], which reads its JIT config
     * from ACTIONS_RUNNER_INPUT_JITCONFIG; on a command line it would be readable by every local user.
     */
    command: z.array(z.string()).min(1).optional(),
    /** Environment for the runner process; of the worker's own it inherits only PATH, HOME, locale and proxy variables. */
    env: z.record(z.string(), z.string()).default({}),
    stopTimeout: durationMs.default(10_000),
    inlineCreateTimeout: inlineAttemptTimeout(2_000),
    inlineDeleteTimeout: inlineAttemptTimeout(2_000),
  })
  .strict();

const externalProviderSchema = z
  .object({
    type: z.literal('external'),
    name: z.string().min(1),
    /** Path of a GARM external provider executable. */
    executable: z.string().min(1),
    configFile: z.string().default(''),
    interfaceVersion: z.enum(['v0.1.0', 'v0.1.1']).default('v0.1.0'),
    /** Host variables whose names start with one of these are passed on (never GARM*). */
    environmentPrefixes: z.array(z.string().min(1)).default([]),
    /**
     * Caps every call of the executable. Unset, as in GARM, a call is bounded only by the step
     * that makes it (a create by its attempt timeout and the pool's bootstrap timeout): a cloud
     * that builds several resources per machine takes minutes, and an executable killed
     * half-way leaves what it made behind.
     */
    timeout: durationMs.pipe(z.number().positive({ message: 'must be more than 0; leave timeout out to bound each call only by the step that makes it' })).optional(),
    /** Off by default: a GARM provider may wait for the machine to boot, and one killed half-way may not clean up after itself. */
    inlineCreateTimeout: inlineAttemptTimeout(0),
    inlineDeleteTimeout: inlineAttemptTimeout(0),
  })
  .strict();

const awsEc2ProviderSchema = z
  .object({
    type: z.literal('aws-ec2'),
    name: z.string().min(1),
    region: z.string().min(1),
    /** Custom endpoint (e.g. a local moto_server). */
    endpoint: z.string().url().optional(),
    subnetId: z.string().optional(),
    securityGroupIds: z.array(z.string()).default([]),
    keyName: z.string().optional(),
    /** Static credentials, read again when their files change; otherwise the AWS SDK's default chain is used. */
    accessKeyId: secretRefSchema.optional(),
    secretAccessKey: secretRefSchema.optional(),
    /** RunInstances and the GitHub call that comes before it take a few seconds at most. */
    inlineCreateTimeout: inlineAttemptTimeout(5_000),
    inlineDeleteTimeout: inlineAttemptTimeout(5_000),
  })
  .strict();

const fakeProviderSchema = z
  .object({
    type: z.literal('fake'),
    name: z.string().min(1),
    /** Directory holding the fake machines and the fault plan; shared by every worker process. */
    stateDir: z.string().min(1),
    inlineCreateTimeout: inlineAttemptTimeout(2_000),
    inlineDeleteTimeout: inlineAttemptTimeout(2_000),
  })
  .strict();

export const providerConfigSchema = z.discriminatedUnion('type', [
  localProcessProviderSchema,
  externalProviderSchema,
  awsEc2ProviderSchema,
  fakeProviderSchema,
]);
export type ProviderConfig = z.infer<typeof providerConfigSchema>;
export type LocalProcessProviderConfig = z.infer<typeof localProcessProviderSchema>;
export type ExternalProviderConfig = z.infer<typeof externalProviderSchema>;
export type AwsEc2ProviderConfig = z.infer<typeof awsEc2ProviderSchema>;
export type FakeProviderConfig = z.infer<typeof fakeProviderSchema>;

/** The Web UI of the local dev server as temporal-dev.sh starts it. */
export const DEFAULT_WEB_UI_URL = 'http://127.0.0.1:8233';

/** Kept for the installations that began with it: their runners' labels and machines' tags carry it. */
export const DEFAULT_CONTROLLER_ID = 'runnerflow';

/** Workflows a worker keeps in memory unless `temporal.workflowCacheSize` says otherwise. */
export const WORKFLOW_CACHE_SIZE = 250;

export const configSchema = z
  .object({
    /** Identifies this installation to providers (GARM_CONTROLLER_ID) and in tags. */
    controllerId: z.string().min(1).default(DEFAULT_CONTROLLER_ID),
    temporal: z
      .object({
        address: z.string().default('127.0.0.1:7233'),
        namespace: z.string().default('default'),
        taskQueue: z.string().default('runnerflow'),
        /** Where operators open the Temporal Web UI; the dashboard links each workflow there. */
        webUiUrl: z.string().url().default(DEFAULT_WEB_UI_URL),
        /**
         * Stack traces in workflow code: in errors a workflow task fails with, and in the
         * Temporal UI's stack trace query. Off, the worker's workflow thread does a third
         * less work (workflows/stack-traces-off.ts); on, for debugging a workflow.
         */
        workflowStackTraces: z.boolean().default(false),
        /**
         * Workflows a worker keeps in memory, 1 – 2 MB of RSS each. An idle runner need not stay: it
         * waits on signals and is replayed from its short history when one comes. A pool should:
         * one not kept is replayed from its whole history each time it wakes (a job, a runner's
         * report, its own audit) or is asked something. The periodic checks, scrapes and
         * dashboards read the pools' memos instead of asking them, so 500 idle pools on 250 kept
         * cost a worker 0.05 of a core (0.37 when every check asked every pool), but a busy pool
         * replayed for every job is slow. Keep at least the pools a worker serves plus the
         * runners busy at once (bench/many-pools.ts).
         */
        workflowCacheSize: z.number().int().min(1).default(WORKFLOW_CACHE_SIZE),
      })
      .strict()
      .default({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'runnerflow', webUiUrl: DEFAULT_WEB_UI_URL, workflowStackTraces: false, workflowCacheSize: WORKFLOW_CACHE_SIZE }),
    api: z
      .object({
        listen: listenSchema.default('127.0.0.1:8080'),
        /** URL instances use to call back (status callbacks); defaults to http://<listen>. */
        publicUrl: z.string().url().optional(),
        adminToken: secretRefSchema.optional(),
        webhookSecret: secretRefSchema.optional(),
        /**
         * While the webhook's secret is rotated: the old one, accepted beside `webhookSecret`
         * until GitHub has been given the new one (deliveries in flight carry either). Given as a
         * file, an empty file is no previous secret: emptying it ends the rotation.
         */
        previousWebhookSecret: secretRefSchema.optional(),
        /** Key that signs instance callback tokens; a random one per process when unset. */
        instanceTokenSecret: secretRefSchema.optional(),
        /**
         * How long a queued job's webhook waits for its pool (or the unmatched record) to
         * take the job before the job goes through a jobRelay workflow instead; 0 never relays.
         */
        intakeRelayAfter: durationMs.default(200),
        /** A relay ends once it has passed its jobs on and nothing came for this long. */
        intakeRelayIdle: durationMs.default(10_000),
        /**
         * Least time between two signals carrying queued jobs to one pool (or the unmatched
         * record): a burst then costs a few large signals instead of many small ones, and a
         * job arriving after a quiet spell still goes at once. 0 signals as soon as the last returned.
         */
        intakePace: durationMs.default(20),
        /**
         * How long an agent's `idle` report waits for its runner's job to start, so that the
         * `jobStarted` signal carries both (api/idle-report-hold.ts); 0, the default, signals it
         * at once. Worth it where machines take seconds to boot (docs/operations.md).
         */
        idleReportHold: durationMs.default(0),
      })
      .strict()
      .default({ listen: '127.0.0.1:8080', intakeRelayAfter: 200, intakeRelayIdle: 10_000, intakePace: 20, idleReportHold: 0 }),
    github: z
      .object({
        credentials: z.array(githubCredentialsSchema).default([]),
        /**
         * How often a secret given as a file (a token, an App's private key, the API's admin token
         * and webhook secrets, an aws-ec2 provider's static keys) is looked at for a new value: a
         * rotated one is used from then on without a restart. A value GitHub or EC2 refuses, and a
         * request whose secret matched none of the API's, has the file looked at again at once.
         */
        secretRecheck: durationMs.default(10_000),
      })
      .strict()
      .default({ credentials: [], secretRecheck: 10_000 }),
    providers: z.array(providerConfigSchema).default([]),
    timings: timingsOverrideSchema.default({}),
    sweep: z
      .object({
        interval: durationMs.default(5 * 60_000),
        gracePeriod: durationMs.default(10 * 60_000),
        enabled: z.boolean().default(true),
        /** Also remove GitHub registrations of our pools that no workflow owns. */
        githubRunners: z.boolean().default(true),
        /**
         * Jobs queued at GitHub this long (repository pools) that no pool knows are routed again, and jobs a
         * pool with an idle runner has held this long are looked up at GitHub; 0 disables both looks.
         */
        lostJobAge: durationMs.default(2 * 60_000),
        /**
         * Organisation pools: the repositories, of those their pools have lately had jobs queued from and those
         * lately pushed to, that each sweep looks into for such jobs, most lately active first (GitHub lists
         * queued jobs only per repository); enterprise pools: of those their pools have lately had jobs
         * queued from, in any of the enterprise's organisations, and then so for one of those
         * organisations a sweep, in turn; 0: none.
         */
        lostJobRepositories: z.number().int().min(0).max(RECENT_REPOSITORIES_KEPT).default(20),
        /**
         * Organisation pools (and an enterprise pool's organisation in turn): more of the organisation's
         * repositories each sweep looks into for such jobs, in turn by name, so that every one is looked into
         * in time: a job queued by a schedule or a dispatch in a repository the pools have not heard from, or
         * past the most lately active; 0: none.
         */
        lostJobRound: z.number().int().min(0).max(100).default(5),
      })
      .strict()
      .superRefine((s, ctx) => {
        if (s.interval < 1_000) ctx.addIssue({ code: 'custom', path: ['interval'], message: 'must be at least 1s (the schedule granularity); enabled: false turns the sweep off' });
      })
      .default({ interval: 5 * 60_000, gracePeriod: 10 * 60_000, enabled: true, githubRunners: true, lostJobAge: 2 * 60_000, lostJobRepositories: 20, lostJobRound: 5 }),
    /**
     * Liveness reconciliation (docs/self-healing.md): per provider, a machine pass every
     * `interval` and a GitHub pass every `githubInterval`, each started up to `jitter` late.
     */
    liveness: z
      .object({
        enabled: z.boolean().default(true),
        interval: durationMs.default(60_000),
        githubInterval: durationMs.default(5 * 60_000),
        jitter: durationMs.default(15_000),
        /**
         * How long a pool's workflow tasks fail on a nondeterminism error before the machine pass
         * resets it, unless the build that wrote its history is the only one polling: then at once.
         */
        stuckPoolAfter: durationMs.default(60_000),
        /**
         * A pool whose glance disagrees with the runners the machine pass lists for it, on two
         * passes running, is asked to look for runners that ended unreported; while it keeps
         * disagreeing, asked again this often (activities/pool-look-requests.ts).
         */
        poolAskInterval: durationMs.default(10 * 60_000),
      })
      .strict()
      .superRefine((l, ctx) => {
        if (l.interval < 1_000) ctx.addIssue({ code: 'custom', path: ['interval'], message: 'must be at least 1s (the schedule granularity)' });
        if (l.githubInterval < 1_000) ctx.addIssue({ code: 'custom', path: ['githubInterval'], message: 'must be at least 1s (the schedule granularity)' });
      })
      .default({ enabled: true, interval: 60_000, githubInterval: 5 * 60_000, jitter: 15_000, stuckPoolAfter: 60_000, poolAskInterval: 10 * 60_000 }),
    /**
     * Failed webhook deliveries asked for again (docs/self-healing.md): per credentials, a
     * pass every `interval` over the deliveries since the last one: an App's own webhook, or
     * for token credentials the webhooks of their pools' repositories and organisations that
     * deliver to `webhookUrl`.
     */
    redelivery: z
      .object({
        enabled: z.boolean().default(true),
        interval: durationMs.default(60_000),
        /**
         * Token credentials: runnerflow's webhook URL as GitHub delivers to it (defaults to
         * `<api.publicUrl>/webhooks/github`). Only webhooks delivering there are followed.
         */
        webhookUrl: z.string().url().optional(),
        /** Token credentials: how often the pools' scopes and their webhooks are looked up again. */
        hookRefresh: durationMs.default(10 * 60_000),
        /** How far back the first pass looks (GitHub keeps three days). */
        lookback: durationMs.default(60 * 60_000),
        /** A failed delivery is asked for again this long after it failed, then doubling up to `maxDelay`. */
        firstDelay: durationMs.default(30_000),
        maxDelay: durationMs.default(30 * 60_000),
        maxAttempts: z.number().int().min(1).max(50).default(8),
      })
      .strict()
      .superRefine((r, ctx) => {
        if (r.interval < 1_000) ctx.addIssue({ code: 'custom', path: ['interval'], message: 'must be at least 1s (the schedule granularity)' });
        if (r.lookback > 3 * 24 * 3_600_000) ctx.addIssue({ code: 'custom', path: ['lookback'], message: 'must be at most 3d (GitHub keeps deliveries three days)' });
        if (r.maxDelay < r.firstDelay) ctx.addIssue({ code: 'custom', path: ['maxDelay'], message: 'must be at least firstDelay' });
      })
      .default({ enabled: true, interval: 60_000, hookRefresh: 10 * 60_000, lookback: 60 * 60_000, firstDelay: 30_000, maxDelay: 30 * 60_000, maxAttempts: 8 }),
    /** Pools created at start when they do not exist yet. */
    pools: z.array(newPoolSettingsSchema).default([]),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>();
    cfg.providers.forEach((p, i) => {
      if (seen.has(p.name)) ctx.addIssue({ code: 'custom', path: ['providers', i, 'name'], message: `duplicate provider name "${p.name}"` });
      seen.add(p.name);
    });
    // Pools look credentials up by name: a second entry of one name would never be used.
    const credentialNames = new Set<string>();
    cfg.github.credentials.forEach((c, i) => {
      if (credentialNames.has(c.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['github', 'credentials', i, 'name'],
          message: `duplicate GitHub credentials name "${c.name}"${c.name === 'default' ? ' (an entry without a name is named "default")' : ''}`,
        });
      }
      credentialNames.add(c.name);
    });
  });

export type RunnerflowConfig = z.output<typeof configSchema>;
export type GitHubCredentialsConfig = z.output<typeof githubCredentialsSchema>;
