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
      responses: {
        200: 'Delivery acted on: `pong` (ping), `queued` (a queued job handed over), `signalled` (a runner of ours told of its job)',
        202: 'Delivery taken without action: `duplicate`, `ignored`, `not_owned`, `no_runner`',
        400: 'Missing X-GitHub-Event or X-GitHub-Delivery (missing_header), a body that is not JSON (invalid_json) or not a workflow_job event (invalid_payload)',
        401: 'Missing or wrong signature',
        413: 'Delivery too large',
        500: 'The event could not be handed over (sink_failed); GitHub shows the delivery as failed, to be delivered again',
        503: 'No webhook secret configured',
      },
    },
    async handle({ request, services }) {
      const { secrets } = services.deps;
      const secret = secrets.webhookSecret;
      if (!secret) {
        throw new HttpError(503, 'webhooks_disabled', 'no webhook secret is configured (set RUNNERFLOW_WEBHOOK_SECRET or api.webhookSecret)');
      }
      const previousSecret = secrets.previousWebhookSecret;
      return handleGitHubWebhook(request, {
        secret,
        ...(previousSecret ? { previousSecret } : {}),
        secretsAfterRecheck: () => {
          const current = secrets.recheck?.() ? secrets.webhookSecret : undefined;
          if (!current) return undefined;
          const previous = secrets.previousWebhookSecret;
          return { secret: current, ...(previous ? { previousSecret: previous } : {}) };
        },
        signatures: services.signatures,
        sink: services.sink,
        logger: services.deps.logger,
      });
    },
  },
];
