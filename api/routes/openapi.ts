import { json } from '../http/responses';
import type { Route } from '../http/router';
import { buildOpenApiDocument } from '../openapi';
import type { Services } from '../services';

const API_VERSION = '1.0.0';

/** Serves the document of `routes` plus itself; built once, on first request. */
export function openApiRoute(routes: () => readonly Route<Services>[]): Route<Services> {
  let document: Record<string, unknown> | undefined;
  return {
    method: 'GET',
    path: '/openapi.json',
    auth: 'public',
    doc: { tag: 'system', summary: 'This OpenAPI document', responses: { 200: 'OpenAPI 3.1 document' } },
    async handle() {
      document ??= buildOpenApiDocument(routes(), API_VERSION);
      return json(document);
    },
  };
}
