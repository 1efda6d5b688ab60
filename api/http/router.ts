/**
 * A route table that serves both dispatch and the OpenAPI document, so the two
 * cannot drift apart.
 */
import type { z } from 'zod';
import { HttpError } from './errors';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** How a route authenticates its caller. */
export type AuthKind = 'admin' | 'instance-token' | 'webhook-signature' | 'public';

export interface RouteDoc {
  summary: string;
  tag: string;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Status code → description. */
  responses: Record<number, string>;
}

export interface RouteContext<S> {
  request: Request;
  url: URL;
  params: Record<string, string>;
  services: S;
}

export interface Route<S> {
  method: Method;
  /** Literal segments and `:param` segments, e.g. `/api/v1/pools/:name`. */
  path: string;
  auth: AuthKind;
  doc: RouteDoc;
  handle(ctx: RouteContext<S>): Promise<Response>;
}

export interface RouteMatch<S> {
  route: Route<S>;
  params: Record<string, string>;
}

function matchPath(pattern: string, pathname: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = pathname.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(':')) {
      if (g === '') return undefined;
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        throw new HttpError(400, 'bad_request', `path segment "${g}" is not valid percent-encoding`);
      }
    } else if (w !== g) {
      return undefined;
    }
  }
  return params;
}

/**
 * Without its trailing slashes, by a loop: `/\/+$/` tries every slash of a path made of slashes
 * as a start, so a caller with no credentials could spend the process's time on one request.
 */
function withoutTrailingSlashes(pathname: string): string {
  let end = pathname.length;
  while (end > 1 && pathname.charCodeAt(end - 1) === 0x2f) end--;
  return pathname.slice(0, end);
}

/** How much of a path an error repeats: enough to recognise it, not a caller's 16 KB. */
const PATH_SHOWN = 200;
const shownPath = (path: string): string => (path.length > PATH_SHOWN ? `${path.slice(0, PATH_SHOWN)}… (${path.length} characters)` : path);

/** Finds the route; a known path with another method is 405 with `Allow`, anything else 404. */
export function findRoute<S>(routes: readonly Route<S>[], method: string, pathname: string): RouteMatch<S> {
  const path = withoutTrailingSlashes(pathname);
  const allowed: string[] = [];
  for (const route of routes) {
    const params = matchPath(route.path, path);
    if (!params) continue;
    if (route.method === method) return { route, params };
    allowed.push(route.method);
  }
  if (allowed.length > 0) {
    const allow = [...new Set(allowed)].join(', ');
    throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${shownPath(path)}; allowed: ${allow}`, undefined, { allow });
  }
  throw new HttpError(404, 'not_found', `no route for ${method} ${shownPath(path)}`);
}
