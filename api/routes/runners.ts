import { z } from 'zod';
import { INSTANCE_STATUSES } from '../../domain/instance-status';
import { poolNameSchema } from '../../domain/pool';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { MACHINE_CLEANUP_WORKFLOW } from '../../workflows/cleanup-messages';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_STATUS } from '../../workflows/search-attributes';
import { RUNNER_INSTANCE_WORKFLOW, deleteSignal, forceDeleteSignal, instanceNameFromWorkflowId, runnerWorkflowId, stateQuery } from '../../workflows/messages';
import { badRequest } from '../http/errors';
import { parseQuery, queryFlag, queryInt } from '../http/query';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import { githubMemoOf, removeFromGitHub } from '../runner-removal';
import type { Services } from '../services';
import { describeRunning, orNotFound } from '../temporal/running';
import { andQuery, quote } from '../temporal/visibility';

const TAG = 'runners';

const listQuery = z.object({
  // A pool name or nothing: any other text is no pool's, and a NUL would cut the visibility query short.
  pool: poolNameSchema.optional(),
  status: z
    .enum(INSTANCE_STATUSES, { error: (issue) => `unknown status "${String(issue.input)}"; expected one of ${INSTANCE_STATUSES.join(', ')}` })
    .optional(),
  leaked: queryFlag,
  limit: queryInt(1, 5000, 500),
});

const deleteQuery = z.object({ force: queryFlag, bypassBusy: queryFlag });

/** Names per visibility query when looking up leaked runners' clean-ups. */
const CLEANUP_LOOKUP_BATCH = 100;

const runnerName = (info: WorkflowExecutionInfo): string => instanceNameFromWorkflowId(info.workflowId) ?? info.workflowId;

function runnerRow(info: WorkflowExecutionInfo) {
  const sa = info.typedSearchAttributes;
  return {
    name: runnerName(info),
    pool: sa.get(RUNNER_POOL) ?? null,
    provider: sa.get(RUNNER_PROVIDER) ?? null,
    status: sa.get(RUNNER_STATUS) ?? null,
    leaked: sa.get(RUNNER_LEAKED) ?? false,
    running: info.status.name === 'RUNNING',
    startTime: info.startTime.toISOString(),
    ...(info.closeTime ? { closeTime: info.closeTime.toISOString() } : {}),
    runId: info.runId,
  };
}

/**
 * The clean-up workflow of each named runner that has one: still retrying (`running`), stopped
 * before it confirmed the machine gone (terminated, say: the sweep is left), or done.
 */
async function cleanupsOf(client: Services['deps']['client'], names: string[]): Promise<Map<string, { workflowId: string; status: string; confirmedGone: boolean }>> {
  const found = new Map<string, { workflowId: string; status: string; confirmedGone: boolean }>();
  if (names.length === 0) return found;
  const query = andQuery([`WorkflowType = ${quote(MACHINE_CLEANUP_WORKFLOW)}`, `${RUNNER_NAME.name} IN (${names.map(quote).join(', ')})`]);
  for await (const info of client.workflow.list({ query, pageSize: names.length })) {
    const name = info.typedSearchAttributes.get(RUNNER_NAME);
    if (name === undefined) continue;
    // A clean-up clears its mark only once the provider confirmed the machine gone.
    found.set(name, { workflowId: info.workflowId, status: info.status.name.toLowerCase(), confirmedGone: info.typedSearchAttributes.get(RUNNER_LEAKED) === false });
  }
  return found;
}

export const runnerRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/api/v1/runners',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary:
        'List runner instances, optionally by pool and status (deleted ones only with status=deleted); leaked=true lists force-deleted runners whose machine is not confirmed gone (RunnerLeaked), each with its clean-up workflow, newest first',
      query: listQuery,
      responses: { 200: 'The runners', 400: 'Unknown status' },
    },
    async handle({ url, services }) {
      const { pool, status, leaked, limit } = parseQuery(url, listQuery);
      const query = andQuery([
        `WorkflowType = ${quote(RUNNER_INSTANCE_WORKFLOW)}`,
        // Ended instance workflows are deleted runners; only show them when asked for (a leaked runner has always ended).
        status !== 'deleted' && !leaked && `ExecutionStatus = 'Running'`,
        leaked && `${RUNNER_LEAKED.name} = true`,
        pool && `${RUNNER_POOL.name} = ${quote(pool)}`,
        status && `${RUNNER_STATUS.name} = ${quote(status)}`,
      ]);
      const client = services.deps.client;
      const runners: Array<ReturnType<typeof runnerRow> & { cleanup?: { workflowId: string; status: string } | null }> = [];
      // A leaked runner whose clean-up has since confirmed its machine gone is not listed: the
      // instance's own mark cannot change once it has closed, its clean-up's can. Leaked runners
      // are read a page at a time, each page's clean-ups in one query.
      const page: WorkflowExecutionInfo[] = [];
      const flush = async () => {
        const cleanups = leaked ? await cleanupsOf(client, page.map((info) => runnerName(info))) : undefined;
        for (const info of page.splice(0)) {
          const cleanup = cleanups?.get(runnerName(info));
          if (cleanup?.confirmedGone || runners.length >= limit) continue;
          runners.push({ ...runnerRow(info), ...(cleanups ? { cleanup: cleanup ? { workflowId: cleanup.workflowId, status: cleanup.status } : null } : {}) });
        }
      };
      await services.bounded(async () => {
        for await (const info of client.workflow.list({ query, pageSize: Math.min(limit, 1000) })) {
          page.push(info);
          if (!leaked || page.length >= CLEANUP_LOOKUP_BATCH) await flush();
          if (runners.length >= limit) break;
        }
        await flush();
      });
      return json({ runners });
    },
  },
  {
    method: 'GET',
    path: '/api/v1/runners/:name',
    auth: 'admin',
    doc: { tag: TAG, summary: 'State of a runner instance, with every status transition', responses: { 200: 'The runner', 404: 'No such runner' } },
    async handle({ params, services }) {
      const name = params.name!;
      return json(await services.query(runnerWorkflowId(name), `runner ${name}`, stateQuery));
    },
  },
  {
    method: 'DELETE',
    path: '/api/v1/runners/:name',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary:
        'Delete a runner gracefully, or with force=true now (GitHub is asked first: a busy runner is refused unless bypassBusy=true)',
      query: deleteQuery,
      responses: {
        202: 'Delete sent to the runner',
        400: 'bypassBusy without force=true, or a flag that is not true/false/1/0',
        404: 'No such runner',
        409: 'The runner is running a job (force without bypassBusy)',
        502: 'GitHub failed (force without bypassBusy)',
      },
    },
    async handle({ url, params, services }) {
      const name = params.name!;
      const { force, bypassBusy } = parseQuery(url, deleteQuery);
      if (bypassBusy && !force) throw badRequest('bypassBusy applies only with force=true');
      const { client, logger } = services.deps;
      const description = await services.bounded(() => describeRunning(client, runnerWorkflowId(name), `runner ${name}`));
      const handle = client.workflow.getHandle(runnerWorkflowId(name));
      if (!force) {
        await orNotFound(`runner ${name}`, () => handle.signal(deleteSignal, { reason: 'deleted through the API' }));
        logger.info('runner delete sent', { runner: name });
        return json({ runner: name, action: 'delete' }, 202);
      }
      const removal = await removeFromGitHub({ name, github: services.deps.github, memo: githubMemoOf(description), bypassBusy });
      const reason = removal.warning ? `forced through the API; ${removal.warning}` : 'forced through the API';
      await orNotFound(`runner ${name}`, () => handle.signal(forceDeleteSignal, { reason }));
      logger.info('runner force delete sent', { runner: name, github: removal.outcome });
      return json({ runner: name, action: 'forceDelete', github: removal.outcome, ...(removal.warning ? { warning: removal.warning } : {}) }, 202);
    },
  },
];
