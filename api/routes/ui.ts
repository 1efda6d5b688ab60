/**
 * The operator dashboard: static files from ui/, served by the API itself (no
 * CDN, no build step). The page holds the admin token in sessionStorage and
 * calls /api/v1/* like any other client; these routes serve no data.
 */
import { readdir, readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { notFound } from '../http/errors';
import type { Route } from '../http/router';
import type { Services } from '../services';

const UI_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** The page only talks to its own origin and runs only its own scripts. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

let servable: Promise<Set<string>> | undefined;

/** The files under ui/ that may be served: listed once, so no request can name anything else. */
function servableFiles(): Promise<Set<string>> {
  servable ??= readdir(UI_DIR).then((names) => new Set(names.filter((n) => CONTENT_TYPES[extname(n)] !== undefined)));
  return servable;
}

async function serveFile(name: string): Promise<Response> {
  if (!(await servableFiles()).has(name)) throw notFound(`no dashboard file "${name}"`);
  const body = await readFile(`${UI_DIR}${name}`);
  return new Response(body, { status: 200, headers: { 'content-type': CONTENT_TYPES[extname(name)]!, ...SECURITY_HEADERS } });
}

export const uiRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/ui',
    auth: 'public',
    doc: { tag: 'ui', summary: 'The operator dashboard (HTML); it asks for the admin token and keeps it in the browser session', responses: { 200: 'The page' } },
    handle: () => serveFile('index.html'),
  },
  {
    method: 'GET',
    path: '/ui/:file',
    auth: 'public',
    doc: { tag: 'ui', summary: "The dashboard's scripts and styles", responses: { 200: 'The file', 404: 'No such file' } },
    handle: ({ params }) => serveFile(params.file!),
  },
];
