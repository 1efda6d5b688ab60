import { randomUUID } from 'node:crypto';
import { signWebhookBody } from '../../../github/simulator/webhook-sender';

export const WEBHOOK_SECRET = 'test-webhook-secret';

export interface DeliveryOptions {
  event?: string;
  deliveryId?: string;
  secret?: string;
  signature?: string | null;
  headers?: Record<string, string>;
}

/** A delivery as GitHub sends it: raw JSON body, signed with the shared secret. */
export function signedRequest(body: unknown, options: DeliveryOptions = {}): Request {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': options.event ?? 'workflow_job',
    'x-github-delivery': options.deliveryId ?? randomUUID(),
    ...options.headers,
  };
  const signature = options.signature === undefined ? signWebhookBody(options.secret ?? WEBHOOK_SECRET, text).sha256 : options.signature;
  if (signature !== null) headers['x-hub-signature-256'] = signature;
  return new Request('http://127.0.0.1/webhooks/github', { method: 'POST', headers, body: text });
}
