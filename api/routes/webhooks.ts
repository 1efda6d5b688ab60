import { handleGitHubWebhook } from '../webhooks/github';
import { HttpError } from '../http/errors';
import type { Route } from '../http/router';
import type { Services } from '../services';

export const webhookRoutes: Route<Services>[] = [
  {
    method: 'POST',
    path: '/webhooks/github',
    auth: 'webhook-signature',
    doc: {
      tag: 'webhooks',
      summary: 'GitHub webhook deliveries (workflow_job), authenticated by X-Hub-Signature-256',
      responses: { 202: 'Delivery handled', 401: 'Missing or wrong signature', 413: 'Delivery too large', 503: 'No webhook secret configured' },
    },
    async handle({ request, services }) {
      const secret = services.deps.secrets.webhookSecret;
      if (!secret) {
        throw new HttpError(503, 'webhooks_disabled', 'no webhook secret is configured (set RUNNERFLOW_WEBHOOK_SECRET or api.webhookSecret)');
      }
      return handleGitHubWebhook(request, { secret, sink: services.sink, logger: services.deps.logger });
    },
  },
];
