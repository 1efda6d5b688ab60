/**
 * Writes github/simulator/openapi-subset.json: the response schemas GitHub
 * publishes for exactly the operations the simulator serves, so tests can hold
 * the simulator to GitHub's description without carrying the 385 MB package.
 *
 *   npx tsx scripts/openapi/extract-github-subset.ts
 *
 * Reads node_modules/@octokit/openapi when present, else fetches the pinned
 * version with `npm pack` into a temporary directory.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SERVED_OPERATIONS, operationKey, type ServedOperation } from '../../github/simulator/served-operations';

const OPENAPI_VERSION = '23.0.2';
const ROOT = resolve(import.meta.dirname, '../..');
const OUTPUT = join(ROOT, 'github/simulator/openapi-subset.json');

type JsonSchema = Record<string, unknown>;
interface OpenApiResponse {
  content?: Record<string, { schema?: JsonSchema }>;
}
interface OpenApiOperation {
  operationId?: string;
  responses?: Record<string, OpenApiResponse>;
}
interface OpenApiDocument {
  info: { version: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

function locatePackage(): { dir: string; cleanup: () => void } {
  const installed = join(ROOT, 'node_modules/@octokit/openapi');
  if (existsSync(join(installed, 'generated/api.github.com.deref.json'))) return { dir: installed, cleanup: () => undefined };
  const tmp = mkdtempSync(join(tmpdir(), 'octokit-openapi-'));
  console.log(`@octokit/openapi is not installed; fetching ${OPENAPI_VERSION} with npm pack into ${tmp}`);
  const tarball = execFileSync('npm', ['pack', `@octokit/openapi@${OPENAPI_VERSION}`, '--silent'], { cwd: tmp, encoding: 'utf8' }).trim().split('\n').pop();
  if (!tarball) throw new Error('npm pack printed no tarball name');
  execFileSync('tar', ['-xzf', tarball, '-C', tmp], { cwd: tmp });
  return { dir: join(tmp, 'package'), cleanup: () => rmSync(tmp, { recursive: true, force: true }) };
}

function loadDescription(dir: string, name: ServedOperation['description']): OpenApiDocument {
  return JSON.parse(readFileSync(join(dir, `generated/${name}.deref.json`), 'utf8')) as OpenApiDocument;
}

/** Examples and prose are dropped: the subset is for validation, and stays small. */
function stripDocumentation(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripDocumentation);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'example' || key === 'examples' || key === 'description') continue;
    out[key] = stripDocumentation(inner);
  }
  return out;
}

function responseSchemas(op: OpenApiOperation): Record<string, JsonSchema | null> {
  const out: Record<string, JsonSchema | null> = {};
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    const schema = response.content?.['application/json']?.schema;
    out[status] = schema ? (stripDocumentation(schema) as JsonSchema) : null;
  }
  return out;
}

function main(): void {
  const { dir, cleanup } = locatePackage();
  try {
    const documents = new Map<ServedOperation['description'], OpenApiDocument>();
    const describe = (name: ServedOperation['description']): OpenApiDocument => {
      let doc = documents.get(name);
      if (!doc) documents.set(name, (doc = loadDescription(dir, name)));
      return doc;
    };
    const operations: Record<string, { operationId: string; description: string; responses: Record<string, JsonSchema | null> }> = {};
    for (const served of SERVED_OPERATIONS) {
      const op = describe(served.description).paths[served.template]?.[served.method.toLowerCase()];
      if (!op) throw new Error(`${operationKey(served)} is not in GitHub's ${served.description} description`);
      operations[operationKey(served)] = { operationId: op.operationId ?? '', description: served.description, responses: responseSchemas(op) };
    }
    // GitHub answers undocumented errors (404 on a runner, 403 rate limits, 5xx) with its "Basic Error" body.
    const jit = describe('api.github.com').paths['/repos/{owner}/{repo}/actions/runners/generate-jitconfig']?.post;
    const basicError = jit ? responseSchemas(jit)['404'] : undefined;
    if (!basicError) throw new Error('Basic Error schema not found (generate-jitconfig 404)');
    const subset = {
      source: { package: '@octokit/openapi', version: OPENAPI_VERSION, descriptions: [...documents.keys()] },
      generatedBy: 'scripts/openapi/extract-github-subset.ts',
      basicError,
      operations,
    };
    writeFileSync(OUTPUT, `${JSON.stringify(subset, null, 2)}\n`);
    console.log(`wrote ${Object.keys(operations).length} operations to ${OUTPUT}`);
  } finally {
    cleanup();
  }
}

main();
