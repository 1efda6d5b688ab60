/**
 * One pass over recent webhook deliveries: the attempts since the last pass are read
 * (newest first, a page of 100 per call), failed `workflow_job` deliveries are asked
 * for again on a doubling backoff, and the state of those still failing goes back in
 * the result for the next pass.
 *
 * A GitHub App has one webhook of its own. Token credentials have none; their events
 * come through webhooks of the repositories and organisations their pools register in,
 * so the pass follows each of those that delivers to runnerflow. An enterprise has no
 * webhooks a token can read: for an enterprise's pools, the organisations of the
 * repositories they have lately had jobs from stand in for it. Which ones is looked
 * up again every `hookRefreshMs`, not on every pass: finding them costs a listing of the
 * pools, a query per enterprise pool and a call per scope. A pass then costs one listing
 * call per webhook (per 100 new attempts) and one call per redelivery, whatever the number
 * of runners.
 *
 * Safe to redo: the intake de-duplicates deliveries by GUID, and a pass that fails
 * half-way is followed by one that starts again from the last completed state.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context, log } from '@temporalio/activity';
import { Client, QueryNotRegisteredError } from '@temporalio/client';
import { PoolDirectory } from '../api/pool-directory';
import { eachConcurrently } from '../domain/concurrency';
import {
  absorbAttempts,
  dueDeliveries,
  isRunnerflowHook,
  nextAttemptAt,
  type DeliveryStreamState,
  type FailingDelivery,
  type HookStreamState,
  type ListingGap,
  type RedeliveryOptions,
  type RedeliveryState,
} from '../domain/webhook-redelivery';
import { isAccessRefused, scopeKey, type GitHubScope, type HookScope, type ScopeWebhooksPort, type WebhookDeliveriesPort, type WebhookDelivery } from '../github/port';
import { poolStateQuery } from '../workflows/pool-messages';
import { githubOfMemo } from '../workflows/pool-memo';
import { webhookRedeliveries, webhookRedeliveryLastRun } from '../observability/metrics';
import { reportErrorText, toActivityFailure } from './failures';
import { RecentRepositoriesReader } from './recent-repositories-reader';

export interface RedeliveryArgs extends RedeliveryOptions {
  credentials: string;
  /** How far back the first pass (one with no state) looks, and the first look at a webhook found later. */
  lookbackMs: number;
  /**
   * Token credentials: runnerflow's webhook URL. The pass follows the webhooks that deliver
   * there on the scopes of the pools using these credentials. Absent for an App's own webhook.
   */
  webhookUrl?: string;
  /** Token credentials: how often the pools' scopes and their webhooks are looked up again. */
  hookRefreshMs?: number;
  state?: RedeliveryState;
}

export interface RedeliveryReport {
  credentials: string;
  /** Attempts read this pass. */
  examined: number;
  /** GUIDs asked for again. */
  redelivered: string[];
  /** GUIDs that had all their redeliveries and still failed, or that GitHub no longer has. */
  givenUp: string[];
  /** Deliveries still followed. */
  failing: number;
  /** Older attempts are left for the next passes: a listing reached its page bound before what it had seen. */
  truncated: boolean;
  /** Token credentials: the webhooks followed, e.g. `repo:acme/app hook 123`. */
  hooks?: string[];
  /**
   * Token credentials: organisations looked at for an enterprise's pools whose webhooks GitHub
   * would not list to these credentials (404 or 403), e.g. `org:acme (for enterprise:big)`.
   * Expected where the token may manage the enterprise's runners but not its organisations'
   * webhooks, so not counted among the failures.
   */
  unreadable?: string[];
  failed: { target: string; error: string }[];
  state: RedeliveryState;
}

export interface WebhookRedeliveryDeps {
  /** An App's own webhook, for App credentials. */
  hooks?: (credentials: string) => WebhookDeliveriesPort;
  /** Repositories' and organisations' webhooks, for token credentials. */
  scopeHooks?: (credentials: string) => ScopeWebhooksPort;
  /** Token credentials: the scopes of the pools that use them (`poolScopesFrom` reads them from Temporal). */
  poolScopes?: (credentials: string) => Promise<PoolScopes>;
}

export interface PoolScopes {
  scopes: GitHubScope[];
  failed: { target: string; error: string }[];
  /** Organisations among `scopes` that stand in for an enterprise's pools (scope key → the enterprise's), none of the pools' own. */
  forEnterprise?: Record<string, string>;
}

/** Pages read per webhook and pass: 2,000 attempts, several minutes of a very busy organisation's webhooks. */
const MAX_PAGES = 20;
/** Gaps a webhook's listing may carry: 20 passes' worth of attempts not yet caught up with. */
const MAX_GAPS = 20;
const MAX_GAP_FAILURES = 3;
const DEFAULT_HOOK_REFRESH_MS = 10 * 60_000;
const hookName = (stream: Pick<HookStreamState, 'scope' | 'hookId'>): string => `${scopeKey(stream.scope)} hook ${stream.hookId}`;

/** Pools asked at once: many pools, or a few that do not answer, stay well inside a pass's heartbeat. */
const POOL_QUERIES_AT_ONCE = 16;

/**
 * The scopes of the running pools (of this installation's task queue) that use the credentials,
 * from their memos (a query of a pool whose older memo does not name them). An enterprise
 * pool adds the organisations of the repositories it has lately had jobs from (one more query,
 * when its glance shows they changed since it last answered): their webhooks carry its jobs'
 * events.
 */
export function poolScopesFrom(client: Client, taskQueue: string, queryTimeoutMs = 5_000, heartbeat = () => Context.current().heartbeat()): NonNullable<WebhookRedeliveryDeps['poolScopes']> {
  const directory = new PoolDirectory(client, 0, taskQueue);
  const recentOf = new RecentRepositoriesReader(client, queryTimeoutMs);
  return async (credentials) => {
    const scopes = new Map<string, GitHubScope>();
    const heard = new Map<string, string>();
    const failed: { target: string; error: string }[] = [];
    const pools = (await directory.fetch()).filter((entry) => entry.memo);
    // Kept for every pool listed, whatever its credentials: each call reads one credentials' pools.
    recentOf.keepOnly(new Set(pools.map((entry) => entry.workflowId)));
    await eachConcurrently(pools, POOL_QUERIES_AT_ONCE, async (entry) => {
      try {
        const handle = client.workflow.getHandle(entry.workflowId);
        // The memo names the credentials; a pool whose older memo does not is asked.
        const github = githubOfMemo(entry.memo) ?? (await client.withDeadline(Date.now() + queryTimeoutMs, () => handle.query(poolStateQuery))).settings.github;
        if (github.credentials !== credentials) return;
        scopes.set(scopeKey(github.scope), github.scope);
        if (github.scope.kind === 'enterprise') {
          const enterprise = scopeKey(github.scope);
          try {
            for (const [repository] of await recentOf.of(entry.workflowId, entry.memo?.glance)) {
              const org = repository.split('/')[0];
              if (org) heard.set(scopeKey({ kind: 'org', org: org.toLowerCase() }), enterprise);
            }
          } catch (err) {
            // A pool run by an older worker has no such query: its organisations are known from its next run on.
            if (!(err instanceof QueryNotRegisteredError)) failed.push({ target: `recent repositories of pool ${entry.name}`, error: reportErrorText(err) });
          }
        }
      } catch (err) {
        failed.push({ target: `pool ${entry.name}`, error: reportErrorText(err) });
      }
      heartbeat();
    });
    // An organisation a pool of its own uses is followed as that pool's.
    const forEnterprise: Record<string, string> = {};
    for (const [key, enterprise] of heard) {
      if ([...scopes.keys()].some((k) => k.toLowerCase() === key)) continue;
      scopes.set(key, { kind: 'org', org: key.slice('org:'.length) });
      forEnterprise[key] = enterprise;
    }
    return { scopes: [...scopes.values()], failed, ...(Object.keys(forEnterprise).length > 0 ? { forEnterprise } : {}) };
  };
}

/** What operators alert on: a delivery given up is an event lost for good; redeliveries mean GitHub could not reach runnerflow. */
function countPass(report: RedeliveryReport): void {
  const { credentials } = report;
  webhookRedeliveries.inc({ credentials, outcome: 'redelivered' }, report.redelivered.length);
  webhookRedeliveries.inc({ credentials, outcome: 'given_up' }, report.givenUp.length);
  webhookRedeliveries.inc({ credentials, outcome: 'failed' }, report.failed.length);
  webhookRedeliveryLastRun.set({ credentials }, Date.now() / 1000);
}

export function createWebhookRedeliveryActivities(deps: WebhookRedeliveryDeps) {
  /** Reads pages from `cursor` (the newest when absent) while `wanted` holds, within the pass's page budget; `next` when the budget ran out first. */
  async function readPages(port: WebhookDeliveriesPort, cursor: string | undefined, wanted: (d: WebhookDelivery) => boolean, budget: { pages: number }): Promise<{ attempts: WebhookDelivery[]; next?: string }> {
    const attempts: WebhookDelivery[] = [];
    while (budget.pages > 0) {
      budget.pages -= 1;
      const { deliveries, nextCursor } = await port.listWebhookDeliveries(cursor ? { cursor } : {});
      Context.current().heartbeat();
      const fresh = deliveries.filter(wanted);
      attempts.push(...fresh);
      // Newest first: a page that reaches what is not wanted (seen before, or too old) is the last one needed.
      if (fresh.length < deliveries.length || !nextCursor) return { attempts };
      cursor = nextCursor;
    }
    return { attempts, ...(cursor ? { next: cursor } : {}) };
  }

  /**
   * What came since the last pass, newest first, then older attempts earlier passes left
   * unread, oldest gap first. A listing the page budget cuts short leaves a gap for the next
   * pass instead of skipping what it did not reach.
   */
  async function newAttempts(port: WebhookDeliveriesPort, stream: DeliveryStreamState, lookbackMs: number, report: RedeliveryReport): Promise<{ attempts: WebhookDelivery[]; gaps: ListingGap[] }> {
    const budget = { pages: MAX_PAGES };
    const sinceMs = Date.now() - lookbackMs;
    const wanted = (gap: Omit<ListingGap, 'cursor'>) => (d: WebhookDelivery): boolean => (gap.untilId !== undefined ? d.id > gap.untilId : Date.parse(d.deliveredAt) >= (gap.sinceMs ?? sinceMs));
    const bound = stream.newestId !== undefined ? { untilId: stream.newestId } : { sinceMs };
    const top = await readPages(port, undefined, wanted(bound), budget);
    const attempts = [...top.attempts];
    const gaps: ListingGap[] = [];
    for (const gap of stream.gaps ?? []) {
      if (budget.pages === 0) {
        gaps.push(gap);
        continue;
      }
      try {
        const rest = await readPages(port, gap.cursor, wanted(gap), budget);
        attempts.push(...rest.attempts);
        if (rest.next) gaps.push({ cursor: rest.next, ...(gap.untilId !== undefined ? { untilId: gap.untilId } : {}), ...(gap.sinceMs !== undefined ? { sinceMs: gap.sinceMs } : {}) });
      } catch (err) {
        // The newest attempts are read whatever becomes of a gap. A cursor GitHub keeps refusing
        // (expired, say) would stop every later pass: after a few tries it is given up, and said so.
        const failures = (gap.failures ?? 0) + 1;
        report.failed.push({ target: 'older deliveries', error: `${failures < MAX_GAP_FAILURES ? 'not read this pass' : 'given up'}: ${reportErrorText(err)}` });
        if (failures < MAX_GAP_FAILURES) gaps.push({ ...gap, failures });
        budget.pages = 0;
      }
    }
    if (top.next) gaps.push({ cursor: top.next, ...bound });
    // Bounded, since the state travels in every run's result; the oldest go first.
    for (const skipped of gaps.splice(0, Math.max(0, gaps.length - MAX_GAPS))) {
      report.failed.push({ target: 'older deliveries', error: `not read: GitHub listed more attempts than ${MAX_GAPS} passes of ${MAX_PAGES} pages could catch up with (from cursor ${skipped.cursor})` });
    }
    return { attempts, gaps };
  }

  /** One webhook's pass: read what is new, then ask again for what is due. Returns the stream's next state. */
  async function followStream(port: WebhookDeliveriesPort, stream: DeliveryStreamState, args: RedeliveryArgs, report: RedeliveryReport): Promise<DeliveryStreamState> {
    const { attempts, gaps } = await newAttempts(port, stream, args.lookbackMs, report);
    const { state, dropped } = absorbAttempts({ ...stream, gaps }, attempts, args);
    report.examined += attempts.length;
    report.truncated ||= gaps.length > 0;
    report.givenUp.push(...dropped.map((d) => d.guid));
    const now = Date.now();
    const { due, givenUp } = dueDeliveries(state, now, args);
    const done = new Set<FailingDelivery>(givenUp);
    for (const f of givenUp) {
      report.givenUp.push(f.guid);
      log.warn('webhook delivery given up after its redeliveries failed', { guid: f.guid, event: f.event, action: f.action, firstFailedAt: f.firstFailedAt, redeliveries: f.redeliveries });
    }
    for (const f of due) {
      try {
        const outcome = await port.redeliverWebhook(f.attemptId);
        Context.current().heartbeat();
        if (outcome === 'gone') {
          done.add(f);
          report.givenUp.push(f.guid);
          log.warn('webhook delivery no longer kept by GitHub; not asked for again', { guid: f.guid, event: f.event, action: f.action, firstFailedAt: f.firstFailedAt });
          continue;
        }
        f.redeliveries += 1;
        f.nextAt = nextAttemptAt(f.redeliveries, now, args);
        report.redelivered.push(f.guid);
        log.info('failed webhook delivery asked for again', { guid: f.guid, event: f.event, action: f.action, redeliveries: f.redeliveries });
      } catch (err) {
        // Left due: the next pass asks again.
        report.failed.push({ target: f.guid, error: reportErrorText(err) });
      }
    }
    state.failing = state.failing.filter((f) => !done.has(f));
    report.failing += state.failing.length;
    return state;
  }

  /**
   * The webhooks that deliver to runnerflow on the scopes of the credentials' pools, each
   * carrying what was followed on it before. A scope whose listing fails keeps the webhooks
   * it had, so a passing GitHub error forgets nothing.
   */
  async function findHooks(port: ScopeWebhooksPort, args: RedeliveryArgs & { webhookUrl: string }, known: HookStreamState[], report: RedeliveryReport): Promise<HookStreamState[]> {
    const found = await deps.poolScopes!(args.credentials);
    report.failed.push(...found.failed);
    const previous = new Map(known.map((s) => [hookName(s), s]));
    const streams: HookStreamState[] = [];
    for (const scope of found.scopes) {
      // An enterprise has no webhooks a token can read: its organisations stand in for it (`poolScopesFrom`).
      if (scope.kind === 'enterprise') continue;
      const hookScope: HookScope = scope;
      try {
        for (const hook of await port.listWebhooks(hookScope)) {
          if (!isRunnerflowHook(hook, args.webhookUrl)) continue;
          const stream = { scope: hookScope, hookId: hook.id };
          streams.push(previous.get(hookName(stream)) ?? { ...stream, failing: [] });
        }
        Context.current().heartbeat();
      } catch (err) {
        const forEnterprise = found.forEnterprise?.[scopeKey(scope)];
        if (forEnterprise && isAccessRefused(err)) {
          (report.unreadable ??= []).push(`${scopeKey(scope)} (for ${forEnterprise})`);
          continue;
        }
        report.failed.push({ target: `${scopeKey(scope)} webhooks`, error: reportErrorText(err) });
        streams.push(...known.filter((s) => scopeKey(s.scope) === scopeKey(scope)));
      }
    }
    if (found.failed.length > 0) {
      // A pool that could not be asked may be the one using a scope: its webhooks stay until it can be.
      const looked = new Set(found.scopes.map(scopeKey));
      streams.push(...known.filter((s) => !looked.has(scopeKey(s.scope))));
    }
    const kept = new Set(streams.map(hookName));
    for (const gone of known.filter((s) => !kept.has(hookName(s)))) {
      log.warn('webhook no longer followed: no pool of these credentials uses its scope, or it no longer delivers to runnerflow', { credentials: args.credentials, hook: hookName(gone), failing: gone.failing.length });
    }
    return streams;
  }

  async function followScopeHooks(args: RedeliveryArgs & { webhookUrl: string }, report: RedeliveryReport): Promise<RedeliveryState> {
    const port = deps.scopeHooks?.(args.credentials);
    if (!port || !deps.poolScopes) throw ApplicationFailure.nonRetryable(`no repository or organisation webhooks for credentials "${args.credentials}" on this worker`, 'InvalidRedeliveryArgs');
    const now = Date.now();
    const previous = args.state?.hooks;
    const refreshDue = !previous || now - previous.listedAt >= (args.hookRefreshMs ?? DEFAULT_HOOK_REFRESH_MS);
    const streams = refreshDue ? await findHooks(port, args, previous?.streams ?? [], report) : previous.streams;
    const next: HookStreamState[] = [];
    for (const stream of streams) {
      try {
        const state = await followStream(port.webhookDeliveries(stream.scope, stream.hookId), stream, args, report);
        next.push({ scope: stream.scope, hookId: stream.hookId, ...state });
      } catch (err) {
        // One webhook's failure (deleted since, rate limit) must not hold back the others.
        report.failed.push({ target: hookName(stream), error: reportErrorText(err) });
        next.push(stream);
      }
    }
    report.hooks = next.map(hookName);
    return { failing: [], hooks: { listedAt: refreshDue ? now : previous.listedAt, streams: next } };
  }

  return {
    async redeliverFailedWebhooks(args: RedeliveryArgs): Promise<RedeliveryReport> {
      try {
        const report: RedeliveryReport = { credentials: args.credentials, examined: 0, redelivered: [], givenUp: [], failing: 0, truncated: false, failed: [], state: { failing: [] } };
        if (args.webhookUrl !== undefined) {
          report.state = await followScopeHooks({ ...args, webhookUrl: args.webhookUrl }, report);
        } else {
          const port = deps.hooks?.(args.credentials);
          if (!port) throw ApplicationFailure.nonRetryable(`no webhook deliveries for credentials "${args.credentials}" on this worker`, 'InvalidRedeliveryArgs');
          report.state = await followStream(port, args.state ?? { failing: [] }, args, report);
        }
        countPass(report);
        return report;
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  };
}

export type WebhookRedeliveryActivities = ReturnType<typeof createWebhookRedeliveryActivities>;
