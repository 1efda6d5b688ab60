import { describe, expect, it } from 'vitest';
import { absorbAttempts, dueDeliveries, isRunnerflowHook, nextAttemptAt, type RedeliveryOptions } from '../../domain/webhook-redelivery';
import type { ScopeWebhook, WebhookDelivery } from '../../github/port';

const options: RedeliveryOptions = { firstDelayMs: 30_000, maxDelayMs: 300_000, maxAttempts: 3 };
const T0 = Date.parse('2026-11-25T10:00:00Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();
const attempt = (id: number, guid: string, statusCode: number, ms = 0, extra: Partial<WebhookDelivery> = {}): WebhookDelivery => ({
  id,
  guid,
  deliveredAt: at(ms),
  redelivery: false,
  statusCode,
  event: 'workflow_job',
  action: 'queued',
  ...extra,
});

describe('which failed webhook deliveries are asked for again', () => {
  it('follows a failed workflow_job delivery from its newest attempt, and ignores deliveries that succeeded or that the intake does not act on', () => {
    const { state } = absorbAttempts(
      { failing: [] },
      [attempt(3, 'a', 0), attempt(2, 'b', 200), attempt(4, 'c', 500, 0, { event: 'ping', action: null }), attempt(5, 'd', 503)],
      options,
    );
    expect(state.newestId).toBe(5);
    expect(state.failing.map((f) => [f.guid, f.attemptId, f.nextAt])).toEqual([
      ['a', 3, T0 + 30_000],
      ['d', 5, T0 + 30_000],
    ]);
  });

  it('waits out the first delay, then doubles it after each redelivery, up to the cap', () => {
    const { state } = absorbAttempts({ failing: [] }, [attempt(1, 'a', 0)], options);
    expect(dueDeliveries(state, T0 + 29_000, options).due).toEqual([]);
    expect(dueDeliveries(state, T0 + 30_000, options).due.map((f) => f.guid)).toEqual(['a']);
    expect([0, 1, 2, 3, 5].map((n) => nextAttemptAt(n, T0, options) - T0)).toEqual([30_000, 60_000, 120_000, 240_000, 300_000]);
  });

  it('stops following a delivery once an attempt at it succeeds, whichever pass sees it', () => {
    const first = absorbAttempts({ failing: [] }, [attempt(1, 'a', 0)], options).state;
    first.failing[0]!.redeliveries = 1;
    const stillFailing = absorbAttempts(first, [attempt(7, 'a', 0, 60_000, { redelivery: true })], options).state;
    expect(stillFailing.failing).toMatchObject([{ guid: 'a', attemptId: 7, redeliveries: 1 }]);
    const answered = absorbAttempts(stillFailing, [attempt(9, 'a', 202, 120_000, { redelivery: true })], options).state;
    expect(answered).toEqual({ newestId: 9, failing: [] });
  });

  it('gives a delivery up after maxAttempts redeliveries', () => {
    const { state } = absorbAttempts({ failing: [] }, [attempt(1, 'a', 0)], options);
    state.failing[0]!.redeliveries = 3;
    expect(dueDeliveries(state, T0 + 3_600_000, options)).toMatchObject({ due: [], givenUp: [{ guid: 'a' }] });
  });

  it('follows at most a thousand deliveries, giving up the oldest', () => {
    const attempts = Array.from({ length: 1_005 }, (_, i) => attempt(i + 1, `g${i + 1}`, 0));
    const { state, dropped } = absorbAttempts({ failing: [] }, attempts, options);
    expect(state.failing).toHaveLength(1_000);
    expect(dropped.map((d) => d.guid)).toEqual(['g1', 'g2', 'g3', 'g4', 'g5']);
  });
});

describe("which repository and organisation webhooks are runnerflow's", () => {
  const ours = 'https://runners.example.com/webhooks/github';
  const hook = (extra: Partial<ScopeWebhook> = {}): ScopeWebhook => ({ id: 1, active: true, events: ['workflow_job'], url: ours, ...extra });

  it('an active webhook that sends workflow_job (or every event) to our URL', () => {
    expect(isRunnerflowHook(hook(), ours)).toBe(true);
    expect(isRunnerflowHook(hook({ events: ['*'] }), ours)).toBe(true);
    // The same URL written differently: a trailing slash, an upper-case host, a fragment.
    expect(isRunnerflowHook(hook({ url: 'https://RUNNERS.example.com/webhooks/github/#x' }), ours)).toBe(true);
  });

  it('not one that is inactive, sends other events, or delivers elsewhere', () => {
    expect(isRunnerflowHook(hook({ active: false }), ours)).toBe(false);
    expect(isRunnerflowHook(hook({ events: ['push', 'pull_request'] }), ours)).toBe(false);
    // Another installation, or a chat integration on the same repository: not ours to send again.
    expect(isRunnerflowHook(hook({ url: 'https://staging.example.com/webhooks/github' }), ours)).toBe(false);
    expect(isRunnerflowHook(hook({ url: 'https://runners.example.com/webhooks/github?installation=2' }), ours)).toBe(false);
    const { url: _none, ...withoutUrl } = hook();
    expect(isRunnerflowHook(withoutUrl, ours)).toBe(false);
    expect(isRunnerflowHook(hook({ url: 'not a url' }), ours)).toBe(false);
  });
});
