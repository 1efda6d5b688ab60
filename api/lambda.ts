/**
 * The API as an AWS Lambda function (API Gateway HTTP API or a function URL,
 * payload format 2.0): the same fetch-style app as `npm start` serves, the
 * webhook intake and /api/v1 included. The Temporal connection and the app are
 * made on the first invocation of a container and reused by every later one;
 * a failed start is not cached, so the next invocation tries again.
 *
 * Entry point: `handler` (bundle with `npm run build:lambda`, see docs/serverless.md).
 */
import { Client } from '@temporalio/client';
import { checkInstanceTokenSecret, ConfigError, loadConfig } from '../config/load';
import { createGitHubRegistry } from '../github/registry';
import { createLogger } from '../observability/logger';
import { createApp, type App } from './app';
import { HttpError } from './http/errors';
import { errorResponse } from './http/responses';
import { lambdaEventToRequest, LambdaEventError, responseToLambdaResult, type LambdaHttpEvent, type LambdaHttpResult } from './lambda-event';
import { resolveApiSecrets } from './secrets';
import { connectTemporal } from './temporal/connection';

let rootLogger: ReturnType<typeof createLogger> | undefined;
// Made on first use, so the environment of the invocation (RUNNERFLOW_LOG_LEVEL) applies.
const log = () => (rootLogger ??= createLogger({ base: { runtime: 'lambda' } }));

let container: Promise<App> | undefined;
let starts = 0;

async function startContainer(env: NodeJS.ProcessEnv): Promise<App> {
  starts += 1;
  const loaded = loadConfig(env);
  const { config } = loaded;
  // Every container must verify the tokens the workers minted: a per-container key would refuse them all.
  if (!config.api.instanceTokenSecret) {
    if (!env.RUNNERFLOW_INSTANCE_TOKEN_SECRET) {
      throw new ConfigError('RUNNERFLOW_INSTANCE_TOKEN_SECRET (or api.instanceTokenSecret) is required: the workers sign instance callbacks with it');
    }
    config.api.instanceTokenSecret = { env: 'RUNNERFLOW_INSTANCE_TOKEN_SECRET' };
    checkInstanceTokenSecret(config, env);
  }
  // A container serves one request at a time, so a held `idle` callback could never meet its
  // runner's job start here: it would only wait, billed.
  config.api.idleReportHold = 0;
  const connection = await connectTemporal({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const apiLogger = log().child({ component: 'api' });
  const app = createApp({
    client,
    taskQueue: config.temporal.taskQueue,
    config,
    github: createGitHubRegistry(config, env, log().child({ component: 'github' })),
    secrets: resolveApiSecrets(config, env, apiLogger),
    logger: apiLogger,
  });
  log().info('lambda container ready', { temporal: config.temporal.address, namespace: config.temporal.namespace });
  return app;
}

/** The container's app, made once; concurrent first invocations share one start. */
function containerApp(env: NodeJS.ProcessEnv): Promise<App> {
  if (!container) {
    container = startContainer(env);
    container.catch(() => (container = undefined));
  }
  return container;
}

/** How many times this container started the app (1 once warm): the once-per-container promise, observable. */
export function containerStarts(): number {
  return starts;
}

export async function handler(event: LambdaHttpEvent): Promise<LambdaHttpResult> {
  let request: Request;
  try {
    request = lambdaEventToRequest(event);
  } catch (err) {
    if (!(err instanceof LambdaEventError)) throw err;
    return responseToLambdaResult(errorResponse(new HttpError(400, 'bad_request', err.message)));
  }
  let app: App;
  try {
    app = await containerApp(process.env);
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : 'the API could not reach Temporal';
    log().error('lambda container failed to start', { error: (err as Error).message });
    return responseToLambdaResult(errorResponse(new HttpError(503, 'unavailable', message)));
  }
  return responseToLambdaResult(await app(request));
}
