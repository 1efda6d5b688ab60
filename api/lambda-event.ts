/**
 * AWS Lambda HTTP events (API Gateway HTTP API payload format 2.0, which Lambda
 * function URLs use too) to fetch Requests and back. Lambda delivers header
 * names lower-cased, repeated headers joined with commas, cookies in their own
 * array, and a body that is base64 when it is not plain text; the body reaches
 * the app byte for byte, so the webhook signature is checked on what GitHub sent.
 */

export interface LambdaHttpEvent {
  version?: string;
  rawPath: string;
  rawQueryString?: string;
  cookies?: string[];
  headers?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: {
    domainName?: string;
    http: { method: string; path?: string; protocol?: string; sourceIp?: string; userAgent?: string };
    requestId?: string;
    /** accountId, apiId, stage, time, ...: not needed here. */
    [other: string]: unknown;
  };
}

export interface LambdaHttpResult {
  statusCode: number;
  headers: Record<string, string>;
  cookies?: string[];
  body: string;
  isBase64Encoded: boolean;
}

export class LambdaEventError extends Error {}

export function lambdaEventToRequest(event: LambdaHttpEvent): Request {
  const method = event.requestContext?.http?.method;
  if (typeof method !== 'string' || typeof event.rawPath !== 'string') {
    throw new LambdaEventError('not an HTTP API (payload 2.0) or function URL event: requestContext.http.method and rawPath are required');
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers.set(name, value);
  if (event.cookies?.length) headers.set('cookie', event.cookies.join('; '));
  const host = event.requestContext.domainName ?? headers.get('host') ?? 'lambda.local';
  const proto = headers.get('x-forwarded-proto') ?? 'https';
  const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
  const hasBody = event.body !== undefined && event.body !== null && method !== 'GET' && method !== 'HEAD';
  const body = hasBody ? Buffer.from(event.body!, event.isBase64Encoded ? 'base64' : 'utf8') : undefined;
  return new Request(`${proto}://${host}${event.rawPath}${query}`, { method, headers, ...(body ? { body } : {}) });
}

const TEXT_TYPES = /^(text\/|application\/(json|problem\+json|xml|javascript|x-www-form-urlencoded)|image\/svg\+xml)/i;

export async function responseToLambdaResult(response: Response): Promise<LambdaHttpResult> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  const bytes = Buffer.from(await response.arrayBuffer());
  const text = TEXT_TYPES.test(response.headers.get('content-type') ?? 'text/plain');
  return {
    statusCode: response.status,
    headers,
    ...(cookies.length > 0 ? { cookies } : {}),
    body: text ? bytes.toString('utf8') : bytes.toString('base64'),
    isBase64Encoded: !text,
  };
}
