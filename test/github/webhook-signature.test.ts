import { describe, expect, it } from 'vitest';
import { handleGitHubWebhook } from '../../api/webhooks/github';
import { webhookPreviousSecretDeliveries } from '../../observability/metrics';
import { RecentDeliveries } from '../../api/webhooks/recent-deliveries';
import { signWebhookBody } from '../../github/simulator/webhook-sender';
import { RecordingSink } from './support/recording-sink';
import { signedRequest } from './support/signed-request';

// The test vector from GitHub's "Validating webhook deliveries" documentation.
const SECRET = "It's a Secret to Everybody";
const BODY = 'Hello, World!';
const SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

describe('webhook signature', () => {
  it('accepts GitHub documentation test vector', async () => {
    const res = await handleGitHubWebhook(signedRequest(BODY, { event: 'ping', signature: SIGNATURE }), {
      secret: SECRET,
      sink: new RecordingSink(),
      recentDeliveries: new RecentDeliveries(),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'pong' });
  });

  it('rejects the same body under another secret', async () => {
    const res = await handleGitHubWebhook(signedRequest(BODY, { event: 'ping', signature: SIGNATURE }), {
      secret: 'another secret',
      sink: new RecordingSink(),
      recentDeliveries: new RecentDeliveries(),
    });
    expect(res.status).toBe(401);
  });

  it('during a rotation, accepts the previous secret beside the current one, and counts it', async () => {
    const counted = async () => (await webhookPreviousSecretDeliveries.get()).values.reduce((sum, v) => sum + v.value, 0);
    const infos: string[] = [];
    const deps = { secret: 'the new secret', previousSecret: SECRET, sink: new RecordingSink(), logger: { info: (m: string) => infos.push(m), warn: () => undefined } };
    const before = await counted();
    for (const delivery of ['d-1', 'd-2']) {
      const res = await handleGitHubWebhook(signedRequest(BODY, { event: 'ping', signature: SIGNATURE, deliveryId: delivery }), { ...deps, recentDeliveries: new RecentDeliveries() });
      expect(res.status).toBe(200);
    }
    expect((await counted()) - before).toBe(2);
    // Said in the log, but not once per delivery.
    expect(infos.filter((m) => m.includes('previous secret'))).toHaveLength(1);
    const current = await handleGitHubWebhook(signedRequest(BODY, { event: 'ping', signature: signWebhookBody('the new secret', BODY).sha256 }), { ...deps, recentDeliveries: new RecentDeliveries() });
    expect(current.status).toBe(200);
    expect((await counted()) - before).toBe(2);
    const neither = await handleGitHubWebhook(signedRequest(BODY, { event: 'ping', signature: signWebhookBody('a third secret', BODY).sha256 }), { ...deps, recentDeliveries: new RecentDeliveries() });
    expect(neither.status).toBe(401);
    // Without the previous secret configured, its signature is refused.
    const after = await handleGitHubWebhook(signedRequest(BODY, { event: 'ping', signature: SIGNATURE }), { secret: 'the new secret', sink: new RecordingSink(), recentDeliveries: new RecentDeliveries() });
    expect(after.status).toBe(401);
  });

  it('is what the simulator signs with', () => {
    expect(signWebhookBody(SECRET, BODY).sha256).toBe(SIGNATURE);
  });
});
