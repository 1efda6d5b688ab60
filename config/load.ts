import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { poolReferenceIssues } from '../domain/pool';
import { configSchema, DEFAULT_CONTROLLER_ID, parseListen, providerConfigSchema, type RunnerflowConfig, type SecretRef } from './schema';
import { registerSecret } from '../observability/secret-scrub';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** One line per problem: `where: what`. */
export function formatZodIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      const where = [prefix, path].filter(Boolean).join('.');
      return `${where || '(root)'}: ${issue.message}`;
    })
    .join('\n');
}

export interface LoadedConfig {
  config: RunnerflowConfig;
  /** Where the config came from, for the start-up banner. */
  source: string;
  /** Secrets given directly by the environment (they override the file's references). */
  env: NodeJS.ProcessEnv;
}

export function parseConfig(raw: unknown, where = 'config'): RunnerflowConfig {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(`invalid ${where}:\n${formatZodIssues(result.error)}`);
  // With no provider configured, runners run as local processes: what a first start wants.
  if (result.data.providers.length === 0) result.data.providers.push(providerConfigSchema.parse({ type: 'local-process', name: 'local' }));
  checkPoolReferences(result.data, where);
  return result.data;
}

/**
 * What a config allows but an operator should hear about at start. A controllerId left at
 * its default is the same in every installation that left it so; two of them sharing a
 * GitHub organisation or a cloud account each take the other's runners and machines for
 * their own, and their sweeps remove the ones that look abandoned.
 */
export function configWarnings(config: RunnerflowConfig): string[] {
  const warnings: string[] = [];
  if (config.controllerId === DEFAULT_CONTROLLER_ID && config.github.credentials.length > 0) {
    warnings.push(
      `controllerId is the default "${DEFAULT_CONTROLLER_ID}": give each runnerflow installation that shares a GitHub organisation, enterprise or cloud account with another one a controllerId of its own, or their sweeps remove each other's runners and machines`,
    );
  }
  return warnings;
}

/**
 * The pools of the file must name a configured provider and GitHub credentials, as the API
 * checks for its own; else the pool starts and every runner it makes fails. Checked once
 * the default provider is in, which a pool may name.
 */
function checkPoolReferences(config: RunnerflowConfig, where: string): void {
  const configured = { providers: config.providers.map((p) => p.name), credentials: config.github.credentials.map((c) => c.name) };
  const problems = config.pools.flatMap((pool, i) =>
    poolReferenceIssues(pool, configured).map((issue) => `pools.${i}.${issue.path}: pool "${pool.name}": ${issue.message}`),
  );
  if (problems.length > 0) throw new ConfigError(`invalid ${where}:\n${problems.join('\n')}`);
}

/**
 * Reads RUNNERFLOW_CONFIG (YAML) when set, else embedded defaults, then applies
 * what deployments commonly inject through the environment.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const path = env.RUNNERFLOW_CONFIG;
  let raw: unknown = {};
  let source = 'embedded defaults (no RUNNERFLOW_CONFIG)';
  if (path) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read RUNNERFLOW_CONFIG ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    try {
      raw = parseYaml(text) ?? {};
    } catch (err) {
      throw new ConfigError(`${path} is not valid YAML: ${(err as Error).message}`);
    }
    source = path;
  }
  const config = parseConfig(raw, path ?? 'embedded config');
  if (env.TEMPORAL_ADDRESS) config.temporal.address = env.TEMPORAL_ADDRESS;
  if (env.TEMPORAL_NAMESPACE) config.temporal.namespace = env.TEMPORAL_NAMESPACE;
  if (env.RUNNERFLOW_TASK_QUEUE) config.temporal.taskQueue = env.RUNNERFLOW_TASK_QUEUE;
  if (env.TEMPORAL_UI_URL) {
    if (!URL.canParse(env.TEMPORAL_UI_URL)) throw new ConfigError(`TEMPORAL_UI_URL "${env.TEMPORAL_UI_URL}" is not a URL (example: http://127.0.0.1:8233)`);
    config.temporal.webUiUrl = env.TEMPORAL_UI_URL;
  }
  if (env.RUNNERFLOW_LISTEN) {
    try {
      parseListen(env.RUNNERFLOW_LISTEN);
    } catch (err) {
      throw new ConfigError(`RUNNERFLOW_LISTEN: ${(err as Error).message}`);
    }
    config.api.listen = env.RUNNERFLOW_LISTEN;
  }
  if (env.RUNNERFLOW_WEBHOOK_SECRET) config.api.webhookSecret = { env: 'RUNNERFLOW_WEBHOOK_SECRET' };
  if (env.RUNNERFLOW_PREVIOUS_WEBHOOK_SECRET) config.api.previousWebhookSecret = { env: 'RUNNERFLOW_PREVIOUS_WEBHOOK_SECRET' };
  if (env.RUNNERFLOW_ADMIN_TOKEN) config.api.adminToken = { env: 'RUNNERFLOW_ADMIN_TOKEN' };
  checkInstanceTokenSecret(config, env);
  return { config, source, env };
}

/** What api/instance-token.ts needs of its key: a shorter one fails every token minted or checked. */
export const INSTANCE_TOKEN_SECRET_MIN_LENGTH = 16;

const describeSecretRef = (ref: SecretRef): string => ('env' in ref ? `environment variable ${ref.env}` : `file ${ref.file}`);

/**
 * A key too short for instance tokens would let the server start and then fail
 * every runner create and callback; it is refused before anything starts.
 */
export function checkInstanceTokenSecret(config: RunnerflowConfig, env: NodeJS.ProcessEnv = process.env): void {
  const ref = config.api.instanceTokenSecret;
  if (!ref) return;
  let value: string;
  try {
    value = resolveSecret(ref, env) ?? '';
  } catch (err) {
    throw new ConfigError(`api.instanceTokenSecret: ${(err as Error).message}`);
  }
  if (value.length < INSTANCE_TOKEN_SECRET_MIN_LENGTH) {
    throw new ConfigError(
      `api.instanceTokenSecret (${describeSecretRef(ref)}) is ${value.length} characters long; instance tokens need at least ${INSTANCE_TOKEN_SECRET_MIN_LENGTH} (e.g. openssl rand -base64 32)`,
    );
  }
}

/** Resolves a secret reference; the value is never logged. */
export function resolveSecret(ref: SecretRef | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!ref) return undefined;
  if ('env' in ref) {
    const value = env[ref.env];
    if (value === undefined || value === '') throw new ConfigError(`secret environment variable ${ref.env} is not set`);
    registerSecret(value);
    return value;
  }
  let value: string;
  try {
    value = readFileSync(ref.file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError(`cannot read secret file ${ref.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // An empty file is as unset as an empty variable: an empty secret would disable or break what it guards.
  if (value === '') throw new ConfigError(`secret file ${ref.file} is empty`);
  registerSecret(value);
  return value;
}
