import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPE_PREFIXES, SERVED_OPERATIONS, operationKey, type ScopeKind } from '../../github/simulator/served-operations';
import type { GitHubSimulator, ServedResponse } from '../../github/simulator/server';
import { startSimulatedGitHub } from './support/simulated-github';

type Schema = Record<string, unknown>;
interface Subset {
  basicError: Schema;
  operations: Record<string, { responses: Record<string, Schema | null> }>;
}

const subset = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../github/simulator/openapi-subset.json'), 'utf8')) as Subset;
const scopeParams: Record<ScopeKind, Record<string, string>> = {
  repo: { owner: 'octo-org', repo: 'octo-repo' },
  org: { org: 'octo-org' },
  enterprise: { enterprise: 'octo-ent' },
};
const pathOf = (scope: ScopeKind, suffix: string): string =>
  SCOPE_PREFIXES[scope].replace(/\{(\w+)\}/g, (_m, name: string) => scopeParams[scope][name] ?? '') + suffix;

/** Drives every served operation through its success and error answers. */
async function scriptedRun(sim: GitHubSimulator): Promise<void> {
  const call = async (method: string, path: string, body?: unknown, auth = true): Promise<{ status: number; json: unknown }> => {
    const headers: Record<string, string> = { accept: 'application/vnd.github+json', 'content-type': 'application/json' };
    if (auth) headers.authorization = 'Bearer sim-token';
    const res = await fetch(sim.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
  };
  for (const scope of Object.keys(SCOPE_PREFIXES) as ScopeKind[]) {
    const jit = (name: string) => call('POST', pathOf(scope, '/actions/runners/generate-jitconfig'), { name, runner_group_id: 1, labels: ['self-hosted', 'linux'] });
    const first = await jit(`${scope}-1`);
    const busy = await jit(`${scope}-busy`);
    await jit(`${scope}-1`); // 409
    await call('POST', pathOf(scope, '/actions/runners/generate-jitconfig'), { name: `${scope}-bad`, labels: [] }); // 422
    await call('POST', pathOf(scope, '/actions/runners/registration-token'));
    await call('POST', pathOf(scope, '/actions/runners/remove-token'));
    await call('GET', pathOf(scope, '/actions/runners/downloads'));
    await call('GET', pathOf(scope, '/actions/runners?per_page=1&page=1'));
    await call('GET', pathOf(scope, `/actions/runners?name=${scope}-1`));
    const firstId = (first.json as { runner: { id: number } }).runner.id;
    await call('GET', pathOf(scope, `/actions/runners/${firstId}`));
    await call('GET', pathOf(scope, '/actions/runners/999999')); // 404
    const busyRunner = busy.json as { runner: { id: number }; encoded_jit_config: string };
    await sim.startAgent({ jitConfig: busyRunner.encoded_jit_config });
    sim.queueJob({ repository: 'octo-org/octo-repo', labels: ['linux'], durationMs: 60_000 });
    await call('GET', pathOf(scope, `/actions/runners/${busyRunner.runner.id}`)); // online and busy
    await call('DELETE', pathOf(scope, `/actions/runners/${busyRunner.runner.id}`)); // 422
    await call('DELETE', pathOf(scope, `/actions/runners/${firstId}`)); // 204
    await call('DELETE', pathOf(scope, `/actions/runners/${firstId}`)); // 404
  }
  // Runs and jobs of a repository: one run with a job still queued, one whose job is running.
  const queued = sim.queueJob({ repository: 'octo-org/octo-repo', labels: ['no-runner-has-this'] });
  await call('GET', pathOf('repo', '/actions/runs?status=queued&per_page=100'));
  await call('GET', pathOf('repo', '/actions/runs?per_page=1&page=2'));
  await call('GET', pathOf('repo', `/actions/runs/${queued.runId}/jobs?filter=latest`));
  const running = sim.jobs().find((j) => j.status === 'in_progress');
  if (running) await call('GET', pathOf('repo', `/actions/runs/${running.runId}/jobs`));
  // One job as it stands: queued, running, and one the repository does not have.
  await call('GET', pathOf('repo', `/actions/jobs/${queued.id}`));
  if (running) await call('GET', pathOf('repo', `/actions/jobs/${running.id}`));
  await call('GET', pathOf('repo', '/actions/jobs/999999')); // 404
  // The organisation's repositories, most lately pushed first, a page at a time.
  sim.queueJob({ repository: 'octo-org/other-repo', labels: ['no-runner-has-this'] });
  await call('GET', pathOf('org', '/repos?sort=pushed&direction=desc&per_page=1'));
  await call('GET', pathOf('org', '/repos?per_page=100'));
  await call('POST', '/app/installations/1/access_tokens');
  await call('GET', '/rate_limit');
  // The App's webhook deliveries: two that found no receiver, listed a page of one at a time, one sent again.
  sim.setWebhook({ url: 'http://127.0.0.1:9/webhooks/github' });
  sim.queueJob({ repository: 'octo-org/octo-repo', labels: ['nobody-has-this'] });
  sim.queueJob({ repository: 'octo-org/octo-repo', labels: ['nobody-has-this-either'] });
  await sim.webhooksIdle();
  const page = await call('GET', '/app/hook/deliveries?per_page=1');
  const [newest] = page.json as { id: number }[];
  await call('GET', `/app/hook/deliveries?per_page=1&cursor=v1_${newest!.id}`);
  await call('POST', `/app/hook/deliveries/${newest!.id}/attempts`);
  await call('POST', '/app/hook/deliveries/1/attempts'); // 404
  await sim.webhooksIdle();
  // The same webhook as a repository and an organisation list it: hooks, deliveries a page at a time, one sent again.
  for (const scope of ['repo', 'org'] as const) {
    const hooks = await call('GET', pathOf(scope, '/hooks'));
    const [hook] = hooks.json as { id: number }[];
    const deliveries = await call('GET', pathOf(scope, `/hooks/${hook!.id}/deliveries?per_page=1`));
    const [latest] = deliveries.json as { id: number }[];
    await call('GET', pathOf(scope, `/hooks/${hook!.id}/deliveries?per_page=1&cursor=v1_${latest!.id}`));
    await call('POST', pathOf(scope, `/hooks/${hook!.id}/deliveries/${latest!.id}/attempts`));
    await call('POST', pathOf(scope, `/hooks/${hook!.id + 1}/deliveries/${latest!.id}/attempts`)); // 404
  }
  await sim.webhooksIdle();
  await call('GET', pathOf('repo', '/actions/runners'), undefined, false); // 401
  sim.setFault({ kind: 'primary-rate-limit', resetInMs: 60_000, operation: 'list-runners' });
  await call('GET', pathOf('org', '/actions/runners'));
  sim.clearFaults();
  sim.setFault({ kind: 'secondary-rate-limit', retryAfterSeconds: 30, times: 1 });
  await call('GET', pathOf('org', '/actions/runners/downloads'));
  sim.setFault({ kind: 'server-error', status: 503, times: 1 });
  await call('POST', pathOf('enterprise', '/actions/runners/registration-token'));
}

let served: ServedResponse[] = [];
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const compiled = new Map<Schema, ValidateFunction>();
/**
 * OpenAPI 3.0 reads `nullable: true` as "or null" even next to an `enum` (a queued job's
 * `conclusion` is null); Ajv only accepts null when the enum lists it, so it is added.
 */
function withNullableEnums(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withNullableEnums);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = withNullableEnums(inner);
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...(out.enum as unknown[]), null];
  return out;
}
const validatorFor = (schema: Schema): ValidateFunction => {
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = ajv.compile(withNullableEnums(schema) as Schema)));
  return validate;
};

beforeAll(async () => {
  const { sim } = await startSimulatedGitHub({ recordResponses: true });
  try {
    await scriptedRun(sim);
    served = sim.servedResponses();
  } finally {
    await sim.close();
  }
});
afterAll(() => compiled.clear());

describe("simulator answers against GitHub's OpenAPI description", () => {
  it('the subset covers exactly the operations the simulator serves', () => {
    expect(Object.keys(subset.operations).sort()).toEqual(SERVED_OPERATIONS.map(operationKey).sort());
  });

  it('every documented success answer was exercised', () => {
    const seen = new Set(served.map((s) => `${s.key} ${s.status}`));
    const missing = Object.entries(subset.operations).flatMap(([key, op]) =>
      Object.keys(op.responses)
        .filter((status) => status.startsWith('2'))
        .map((status) => `${key} ${status}`)
        .filter((k) => !seen.has(k)),
    );
    expect(missing).toEqual([]);
  });

  it('the scripted run also produced 202, 404, 409, 422, 401, 403 and 5xx answers', () => {
    expect(new Set(served.map((s) => s.status))).toEqual(new Set([200, 201, 202, 204, 401, 403, 404, 409, 422, 503]));
  });

  it('every body served validates against its documented schema (or Basic Error for undocumented errors)', () => {
    expect(served.length).toBe(74);
    const failures: string[] = [];
    for (const answer of served) {
      const documented = subset.operations[answer.key]?.responses;
      if (!documented) {
        failures.push(`${answer.key}: not in the subset`);
        continue;
      }
      const schema = String(answer.status) in documented ? documented[String(answer.status)] : answer.status >= 400 ? subset.basicError : undefined;
      if (schema === undefined) {
        failures.push(`${answer.key} ${answer.status}: status not documented`);
        continue;
      }
      if (schema === null) {
        if (answer.body !== undefined) failures.push(`${answer.key} ${answer.status}: documented without a body but one was sent`);
        continue;
      }
      const validate = validatorFor(schema);
      if (!validate(answer.body)) failures.push(`${answer.key} ${answer.status}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(failures).toEqual([]);
  });
});
