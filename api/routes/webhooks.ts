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
      const webhookModule = '../webhooks/github';
      const { handleGitHubWebhook } = (await import(webhookModule)) as {
        handleGitHubWebhook(request: Request, deps: { secret: string; sink: Services['sink'] }): Promise<Response>;
      };
      return handleGitHubWebhook(request, { secret, sink: services.sink });
    },
  },
];
