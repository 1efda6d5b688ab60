/**
 * What the API checks beyond the schema before a pool reaches Temporal: the
 * provider and GitHub credentials it names must be configured, else the pool
 * would only fail later, inside every runner it creates.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { RunnerflowConfig } from '../config/schema';
import { poolReferenceIssues, type PoolSettings } from '../domain/pool';
import { POOL_AUDIT_BACKSTOP_MS, DEFAULT_TIMINGS, resolveTimings, type InstanceTimings } from '../domain/timings';
import { RUNNER_POOL } from '../workflows/search-attributes';
import { poolMemoOf } from '../workflows/pool-memo';
import { RUNNER_POOL_WORKFLOW, poolWorkflowId, type RunnerPoolInput } from '../workflows/pool-messages';
import { HttpError, conflict, type FieldIssue } from './http/errors';

export function checkPoolReferences(settings: PoolSettings, config: RunnerflowConfig): void {
  const issues: FieldIssue[] = poolReferenceIssues(settings, {
    providers: config.providers.map((p) => p.name),
    credentials: config.github.credentials.map((c) => c.name),
  });
  if (issues.length > 0) {
    throw new HttpError(400, 'validation_failed', `invalid pool: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
}

/** A new pool's timings: the configured ones over the defaults, its own look a backstop while the liveness passes run. */
export function poolTimingsOf(config: Pick<RunnerflowConfig, 'timings' | 'liveness'>): InstanceTimings {
  return resolveTimings(config.timings, config.liveness.enabled ? { ...DEFAULT_TIMINGS, poolAuditIntervalMs: POOL_AUDIT_BACKSTOP_MS } : DEFAULT_TIMINGS);
}

/** Starts the pool's workflow; 409 when a pool of that name is running. */
export async function startPool(
  client: Client,
  taskQueue: string,
  config: RunnerflowConfig,
  settings: PoolSettings,
  /** Memo entries beyond the routing memo (e.g. the demo's marker). */
  extraMemo: Record<string, unknown> = {},
): Promise<{ runId: string }> {
  const input: RunnerPoolInput = { settings, timings: poolTimingsOf(config) };
  try {
    const handle = await client.workflow.start(RUNNER_POOL_WORKFLOW, {
      workflowId: poolWorkflowId(settings.name),
      taskQueue,
      args: [input],
      typedSearchAttributes: [{ key: RUNNER_POOL, value: settings.name }],
      memo: { ...extraMemo, ...poolMemoOf(settings) },
      workflowIdConflictPolicy: 'FAIL',
    });
    return { runId: handle.firstExecutionRunId };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw conflict(`pool ${settings.name} already exists`, 'already_exists');
    throw err;
  }
}
