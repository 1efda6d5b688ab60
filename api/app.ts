/**
 * The runnerflow HTTP API as one fetch-style handler, so the same code runs
 * behind node:http (api/node-server.ts) or as a serverless function.
 */
import { randomUUID } from 'node:crypto';
import type { AppDeps, Logger } from './deps';
import { requireAdmin } from './http/auth';
import { HttpError } from './http/errors';
import { errorResponse } from './http/responses';
import { findRoute, type Route } from './http/router';
import { callbackRoutes } from './routes/callbacks';
import { metadataRoutes } from './routes/metadata';
import { jobRoutes } from './routes/jobs';
import { openApiRoute } from './routes/openapi';
import { overviewRoutes } from './routes/overview';
import { poolRoutes } from './routes/pools';
import { runnerRoutes } from './routes/runners';
import { systemRoutes } from './routes/system';
import { uiRoutes } from './routes/ui';
import { webhookRoutes } from './routes/webhooks';
import { createServices, type Services } from './services';
import { temporalHttpError } from './temporal/errors';

export interface App {
  (request: Request): Promise<Response>;
  /** Answers the callbacks it holds now, by signalling them (api/idle-report-hold.ts): the server is stopping. */
  releaseHeld?(): void;
  /** Told of a failed read of a pool made outside the routes (the metrics' scrape). */
  poolReadFailed?(pool: string, err: unknown): void;
}

export function apiRoutes(): Route<Services>[] {
  const routes: Route<Services>[] = [...systemRoutes, ...webhookRoutes, ...poolRoutes, ...runnerRoutes, ...jobRoutes, ...callbackRoutes, ...metadataRoutes, ...overviewRoutes, ...uiRoutes];
  routes.push(openApiRoute(() => routes));
  return routes;
}

function failureResponse(err: unknown, request: Request, logger: Logger, taskQueue: string): Response {
  if (err instanceof HttpError) return errorResponse(err);
  const infrastructure = temporalHttpError(err, taskQueue);
  if (infrastructure) {
    logger.warn('request failed on Temporal', { method: request.method, path: new URL(request.url).pathname, error: (err as Error).message });
    return errorResponse(infrastructure);
  }
  // A bug: the caller gets an id to quote, the log gets the detail.
  const requestId = randomUUID();
  logger.error('request failed', {
    requestId,
    method: request.method,
    path: new URL(request.url).pathname,
    error: err instanceof Error ? err.message : String(err),
    stack: err instanceof Error ? err.stack : undefined,
  });
  return errorResponse(new HttpError(500, 'internal', `internal server error (request id ${requestId})`, { requestId }));
}

/** A token refused may be the one just written into the admin token's file: look, and check it once more. */
function authorizeAdmin(request: Request, secrets: AppDeps['secrets']): void {
  try {
    requireAdmin(request, secrets.adminToken);
  } catch (err) {
    if (!secrets.recheck?.()) throw err;
    requireAdmin(request, secrets.adminToken);
  }
}

export function createApp(deps: AppDeps): App {
  const services = createServices(deps);
  const routes = apiRoutes();
  const app: App = async (request) => {
    try {
      const url = new URL(request.url);
      const { route, params } = findRoute(routes, request.method, url.pathname);
      if (route.auth === 'admin') authorizeAdmin(request, deps.secrets);
      return await route.handle({ request, url, params, services });
    } catch (err) {
      return failureResponse(err, request, deps.logger, deps.taskQueue);
    }
  };
  app.releaseHeld = () => services.idleReports.releaseAll();
  app.poolReadFailed = (pool, err) => services.stuckWorkflows.heardPool(pool, err);
  return app;
}
