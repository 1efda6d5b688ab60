/**
 * Token credentials' webhooks, pass by pass, on a real worker: which webhooks are followed,
 * when they are looked up again, and what a failing GitHub call leaves in place.
 */
import { describe, expect, it } from 'vitest';
import { createWebhookRedeliveryActivities, type PoolScopes, type RedeliveryArgs, type RedeliveryReport } from '../../activities/webhook-redelivery-activities';
import type { GitHubScope, HookScope, ScopeWebhook, ScopeWebhooksPort, WebhookDelivery } from '../../github/port';
import { GitHubApiError, scopeKey } from '../../github/port';
import { WEBHOOK_REDELIVERY_WORKFLOW } from '../../workflows/webhook-redelivery';
import { uniqueName, useTestWorker } from '../support/temporal';

const OURS = 'https://runners.example.com/webhooks/github';
const repo: HookScope = { kind: 'repo', owner: 'acme', repo: 'app' };
const org: HookScope = { kind: 'org', org: 'acme' };
const enterprise: GitHubScope = { kind: 'enterprise', enterprise: 'big' };

/** GitHub's webhooks of two scopes, each with one failed `queued` delivery; calls counted, failures switchable. */
class WebhooksDouble implements ScopeWebhooksPort {
  readonly hooks = new Map<string, ScopeWebhook[]>([
    // Ours, and another integration on the same repository.
    [scopeKey(repo), [{ id: 1, active: true, events: ['workflow_job'], url: OURS }, { id: 2, active: true, events: ['workflow_job'], url: 'https://chat.example.com/hook' }]],
    [scopeKey(org), [{ id: 3, active: true, events: ['*'], url: `${OURS}/` }]],
  ]);
  readonly deliveries = new Map<number, WebhookDelivery[]>([1, 2, 3].map((id) => [id, [failedQueued(id * 10, `guid-${id}`)]]));
  readonly listed: string[] = [];
  readonly redelivered: number[] = [];
  failListing = new Set<string>();
  /** Scopes whose webhooks GitHub will not list to these credentials: 404, as for an organisation the token may not administer. */
  refuseListing = new Set<string>();
  failDeliveries = new Set<number>();

  async listWebhooks(scope: HookScope): Promise<ScopeWebhook[]> {
    this.listed.push(scopeKey(scope));
    if (this.failListing.has(scopeKey(scope))) throw new Error(`GitHub answered 502 listing the webhooks of ${scopeKey(scope)}`);
    if (this.refuseListing.has(scopeKey(scope))) throw new GitHubApiError(`list webhooks of ${scopeKey(scope)}: 404 Not Found`, 404, false);
    return this.hooks.get(scopeKey(scope)) ?? [];
  }

  webhookDeliveries(_scope: HookScope, hookId: number) {
    return {
      listWebhookDeliveries: async () => {
        if (this.failDeliveries.has(hookId)) throw new Error(`GitHub answered 502 listing the deliveries of hook ${hookId}`);
        return { deliveries: [...(this.deliveries.get(hookId) ?? [])].reverse() };
      },
      redeliverWebhook: async (attemptId: number) => {
        this.redelivered.push(attemptId);
        return 'redelivered' as const;
      },
    };
  }
}

function failedQueued(id: number, guid: string): WebhookDelivery {
  return { id, guid, deliveredAt: new Date(Date.now() - 60_000).toISOString(), redelivery: false, statusCode: 0, event: 'workflow_job', action: 'queued' };
}

const github = new WebhooksDouble();
let poolScopeLookups = 0;
/** The pools' scopes, and the pools that could not be asked. */
let pools: PoolScopes = { scopes: [repo, org, enterprise], failed: [] };
const env = useTestWorker({
  extraActivities: createWebhookRedeliveryActivities({
    scopeHooks: () => github,
    poolScopes: async () => {
      poolScopeLookups += 1;
      return pools;
    },
  }),
});

const args = (extra: Partial<RedeliveryArgs> = {}): RedeliveryArgs => ({
  credentials: 'token',
  webhookUrl: OURS,
  hookRefreshMs: 3_600_000,
  lookbackMs: 3_600_000,
  firstDelayMs: 1_000,
  maxDelayMs: 60_000,
  maxAttempts: 5,
  ...extra,
});
const pass = (input: RedeliveryArgs): Promise<RedeliveryReport> =>
  env.client.workflow.execute(WEBHOOK_REDELIVERY_WORKFLOW, { taskQueue: env.w.taskQueue, workflowId: uniqueName('redelivery'), args: [input] });

describe("token credentials' webhooks", () => {
  it('follows only the webhooks that deliver to runnerflow, looks them up again only when due, and keeps them through failing calls', async () => {
    // First pass: the pools' scopes and their webhooks are looked up; the enterprise has none to read.
    const first = await pass(args());
    expect(first.hooks).toEqual(['repo:acme/app hook 1', 'org:acme hook 3']);
    expect(first.redelivered.sort()).toEqual(['guid-1', 'guid-3']);
    expect(github.redelivered.sort()).toEqual([10, 30]);
    expect(github.listed).toEqual(['repo:acme/app', 'org:acme']);
    expect(first.failed).toEqual([]);

    // Within the refresh interval: the webhooks the last pass found, without asking the pools or GitHub again.
    github.deliveries.get(1)!.push(failedQueued(11, 'guid-1b'));
    const second = await pass(args({ state: first.state }));
    expect(poolScopeLookups).toBe(1);
    expect(github.listed).toHaveLength(2);
    expect(second.examined).toBe(1);
    expect(second.state.hooks?.listedAt).toBe(first.state.hooks?.listedAt);

    // Refresh due, the repository's listing fails and the organisation's deliveries cannot be read:
    // both webhooks are still followed, with what they carried, and the failures are reported.
    github.failListing.add('repo:acme/app');
    github.failDeliveries.add(3);
    const third = await pass(args({ state: second.state, hookRefreshMs: 0 }));
    expect(poolScopeLookups).toBe(2);
    expect(third.hooks).toEqual(['repo:acme/app hook 1', 'org:acme hook 3']);
    expect(third.failed.map((f) => f.target).sort()).toEqual(['org:acme hook 3', 'repo:acme/app webhooks']);
    const streams = new Map(third.state.hooks!.streams.map((s) => [`${scopeKey(s.scope)} ${s.hookId}`, s]));
    expect(streams.get('repo:acme/app 1')?.failing.map((f) => f.guid).sort()).toEqual(['guid-1', 'guid-1b']);
    expect(streams.get('org:acme 3')).toEqual(second.state.hooks!.streams.find((s) => s.hookId === 3));

    // The organisation's pool cannot be asked for its settings: its webhook stays followed until it can.
    github.failListing.clear();
    github.failDeliveries.clear();
    pools = { scopes: [repo], failed: [{ target: 'pool org-pool', error: 'query timed out' }] };
    const stuck = await pass(args({ state: third.state, hookRefreshMs: 0 }));
    expect(stuck.hooks).toEqual(['repo:acme/app hook 1', 'org:acme hook 3']);
    expect(stuck.failed).toEqual([{ target: 'pool org-pool', error: 'query timed out' }]);
    pools = { scopes: [repo, org], failed: [] };

    // The webhook stops delivering to runnerflow: it is no longer followed once looked up again.
    github.hooks.set('org:acme', [{ id: 3, active: true, events: ['*'], url: 'https://elsewhere.example.com/hook' }]);
    const fourth = await pass(args({ state: stuck.state, hookRefreshMs: 0 }));
    expect(fourth.hooks).toEqual(['repo:acme/app hook 1']);
    expect(github.redelivered).not.toContain(20);
  });

  it("follows the webhooks of an enterprise pool's organisations, and leaves one whose webhooks the token may not list out of the failures", async () => {
    const readable: HookScope = { kind: 'org', org: 'ent-a' };
    const closed: HookScope = { kind: 'org', org: 'ent-b' };
    const broken: HookScope = { kind: 'org', org: 'ent-c' };
    github.hooks.set(scopeKey(readable), [{ id: 7, active: true, events: ['workflow_job'], url: OURS }]);
    github.deliveries.set(7, [failedQueued(70, 'guid-7')]);
    github.refuseListing.add(scopeKey(closed));
    github.failListing.add(scopeKey(broken));
    const forEnterprise = Object.fromEntries([readable, closed, broken].map((s) => [scopeKey(s), scopeKey(enterprise)]));
    pools = { scopes: [enterprise, readable, closed, broken], failed: [], forEnterprise };
    try {
      const report = await pass(args());
      expect(report.hooks).toEqual(['org:ent-a hook 7']);
      expect(report.redelivered).toEqual(['guid-7']);
      expect(report.unreadable).toEqual(['org:ent-b (for enterprise:big)']);
      // Any other failure is one, as for the pools' own scopes.
      expect(report.failed.map((f) => f.target)).toEqual(['org:ent-c webhooks']);
    } finally {
      github.refuseListing.clear();
      github.failListing.clear();
      pools = { scopes: [repo, org], failed: [] };
    }
  });
});
