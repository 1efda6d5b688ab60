/** The OpenAPI 3.1 document, generated from the route table and its zod schemas. */
import { z } from 'zod';
import type { AuthKind, Route } from './http/router';

type JsonObject = Record<string, unknown>;

function jsonSchema(schema: z.ZodType): JsonObject {
  // Inputs are documented as clients write them (durations as "10m" or ms, defaults optional).
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  return rest;
}

const SECURITY: Record<AuthKind, JsonObject[] | undefined> = {
  admin: [{ adminToken: [] }],
  'instance-token': [{ instanceToken: [] }],
  'webhook-signature': [],
  public: [],
};

function parameters(route: Route<unknown>): JsonObject[] {
  const params: JsonObject[] = route.path
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => ({ name: s.slice(1), in: 'path', required: true, schema: { type: 'string' } }));
  if (route.doc.query) {
    const schema = jsonSchema(route.doc.query) as { properties?: Record<string, JsonObject>; required?: string[] };
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      params.push({ name, in: 'query', required: schema.required?.includes(name) ?? false, schema: property });
    }
  }
  if (route.auth === 'webhook-signature') {
    for (const name of ['X-Hub-Signature-256', 'X-GitHub-Event', 'X-GitHub-Delivery']) {
      params.push({ name, in: 'header', required: true, schema: { type: 'string' } });
    }
  }
  return params;
}

const error = (description: string): JsonObject => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

function operation(route: Route<unknown>): JsonObject {
  const responses: Record<string, JsonObject> = {};
  for (const [status, description] of Object.entries(route.doc.responses)) {
    responses[status] = Number(status) >= 400 ? error(description) : { description };
  }
  if (route.auth === 'admin') {
    responses['401'] ??= error('Missing bearer token');
    responses['403'] ??= error('Wrong bearer token');
  }
  if (route.doc.body) {
    responses['400'] ??= error('The body is not valid JSON, nests too deep, or is not valid input');
    responses['413'] ??= error('The body is too large');
  }
  // Every route behind a token reaches Temporal, which can be down or have no worker to answer.
  if (route.auth === 'admin' || route.auth === 'instance-token') {
    responses['503'] ??= error("Temporal is not reachable (temporal_unavailable), no worker polls the task queue (no_worker), or the workflow's tasks are failing (workflow_task_failing)");
    responses['504'] ??= error('Temporal did not answer in time (temporal_timeout)');
  }
  const op: JsonObject = {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[/:]+(\w)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: route.doc.summary,
    tags: [route.doc.tag],
    parameters: parameters(route),
    responses,
    security: SECURITY[route.auth],
  };
  if (route.doc.body) op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(route.doc.body) } } };
  return op;
}

export function buildOpenApiDocument(routes: readonly Route<unknown>[], version: string): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'runnerflow', version, description: 'Self-hosted GitHub Actions runner manager on Temporal' },
    paths,
    components: {
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: 'RUNNERFLOW_ADMIN_TOKEN or api.adminToken' },
        instanceToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'The token given to each runner instance' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
            },
          },
        },
      },
    },
  };
}
