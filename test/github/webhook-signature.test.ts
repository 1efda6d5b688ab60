import { describe, expect, it } from 'vitest';
import { handleGitHubWebhook } from '../../api/webhooks/github';
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

  it('is what the simulator signs with', () => {
    expect(signWebhookBody(SECRET, BODY).sha256).toBe(SIGNATURE);
  });
});
