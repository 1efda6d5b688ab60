import { newPoolSettingsSchema, poolNameSchema } from '../../domain/pool';
import { scaleSetChanges, scaleSetIdentityOf } from '../../domain/scale-set';
import { poolMemoOf, scaleSetIdentityOfMemo } from '../../workflows/pool-memo';
import { deletePoolSignal, poolStateQuery, poolWorkflowId, updatePoolSignal, type PoolMemo } from '../../workflows/pool-messages';
import { scaleSetListenerId, scaleSetStateQuery, type ScaleSetView } from '../../workflows/scale-set-messages';
import { readJson, readValidJson } from '../http/body';
import { HttpError, badRequest, conflict, notFound, validationError } from '../http/errors';
import { json } from '../http/responses';
import type { Route } from '../http/router';
import { checkPoolReferences, startPool } from '../pool-settings';
import { withCounts } from '../dashboard/pool-overview';
import type { Services } from '../services';
import { describeRunning, orNotFound } from '../temporal/running';

const TAG = 'pools';

export const poolRoutes: Route<Services>[] = [
  {
    method: 'GET',
    path: '/api/v1/pools',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary:
        'List running pools with their labels, priority, size, provider, scope, credentials (the name of the configured entry) and runner prefix, and `glance`: the runners by phase, by instance status and by agent status and the queued jobs, as the pool last wrote them (at most `timings.poolGlanceInterval` old; absent until its first decision)',
      responses: { 200: 'The pools' },
    },
    async handle({ services }) {
      const pools = await services.bounded(() => services.pools.fetch());
      return json({ pools: pools.map((p) => ({ name: p.name, ...p.memo, startTime: p.startTime })) });
    },
  },
  {
    method: 'POST',
    path: '/api/v1/pools',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary: 'Create a pool',
      body: newPoolSettingsSchema,
      responses: { 201: 'Pool created', 400: 'Invalid settings', 409: 'A pool of that name exists' },
    },
    async handle({ request, services }) {
      const settings = await readValidJson(request, newPoolSettingsSchema, services.limits.apiBodyBytes, 'pool');
      checkPoolReferences(settings, services.deps.config);
      const { runId } = await startPool(services.deps.client, services.deps.taskQueue, services.deps.config, settings);
      const workflowId = poolWorkflowId(settings.name);
      services.pools.poolStarted({ name: settings.name, workflowId, runId, startTime: new Date().toISOString(), memo: poolMemoOf(settings) });
      services.deps.logger.info('pool created', { pool: settings.name, runId });
      return json({ pool: settings }, 201, { location: `/api/v1/pools/${encodeURIComponent(settings.name)}` });
    },
  },
  {
    method: 'GET',
    path: '/api/v1/pools/:name',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary:
        'Settings, runners (each with its phase: starting, idle, busy or leaving), their counts, queued jobs and target size of a pool; scale-set pools add `scaleSet` (session, last message id, statistics, desired count)',
      responses: { 200: 'The pool', 404: 'No such pool' },
    },
    async handle({ params, services }) {
      const name = params.name!;
      await services.bounded(() => describeRunning(services.deps.client, poolWorkflowId(name), `pool ${name}`));
      const view = await services.query(poolWorkflowId(name), `pool ${name}`, poolStateQuery);
      if (view.settings.mode !== 'scaleSet') return json({ name, ...withCounts(view) });
      // A listener that has not started yet (or already stopped) is shown as absent rather than failing the pool.
      const scaleSet: ScaleSetView | null = await services.deps.client.workflow
        .getHandle(scaleSetListenerId(name))
        .query(scaleSetStateQuery)
        .catch(() => null);
      return json({ name, ...withCounts(view), scaleSet });
    },
  },
  {
    method: 'PUT',
    path: '/api/v1/pools/:name',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary: 'Replace the settings of a pool (the name may be omitted from the body)',
      body: newPoolSettingsSchema,
      responses: {
        202: 'Update sent to the pool',
        400: 'Invalid settings',
        404: 'No such pool',
        409: "The settings would change the pool's mode, or the scale set of a scale-set pool (its name, scope, credentials or labels; a new runner group moves it)",
      },
    },
    async handle({ request, params, services }) {
      const name = params.name!;
      // Only pools that exist are replaced, and no pool has a name the schema refuses: said as GET says it.
      if (!poolNameSchema.safeParse(name).success) throw notFound(`pool ${name} does not exist`);
      const raw = await readJson(request, services.limits.apiBodyBytes);
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('request body must be a JSON object');
      const body = raw as Record<string, unknown>;
      if (body.name !== undefined && typeof body.name !== 'string') {
        const message = `expected a string, got ${body.name === null ? 'null' : Array.isArray(body.name) ? 'an array' : typeof body.name}`;
        throw new HttpError(400, 'validation_failed', `invalid pool: name: ${message}`, [{ path: 'name', message }]);
      }
      if (body.name !== undefined && body.name !== name) {
        throw badRequest(`the body names pool "${body.name}" but the path names "${name}"; a pool cannot be renamed`);
      }
      const parsed = newPoolSettingsSchema.safeParse({ ...body, name });
      if (!parsed.success) throw validationError(parsed.error, 'pool');
      checkPoolReferences(parsed.data, services.deps.config);
      const running = await services.bounded(() => describeRunning(services.deps.client, poolWorkflowId(name), `pool ${name}`));
      // A webhook pool's queue and a scale set's session are different books: switching one for the
      // other under a running pool would strand whichever jobs the old one held.
      const mode = (running.memo as { mode?: unknown } | undefined)?.mode === 'scaleSet' ? 'scaleSet' : 'webhook';
      if (parsed.data.mode !== mode) {
        throw conflict(`pool ${name} is a ${mode} pool and mode cannot be changed to ${parsed.data.mode}; delete the pool and create it again`, 'mode_change');
      }
      if (mode === 'scaleSet') {
        // Taken in silence, such a change would leave the pool on the scale set it has. A pool whose
        // memo predates naming its scale set is asked.
        const current =
          scaleSetIdentityOfMemo(running.memo as Partial<PoolMemo> | undefined) ??
          scaleSetIdentityOf((await services.query(poolWorkflowId(name), `pool ${name}`, poolStateQuery)).settings);
        const changes = scaleSetChanges(current, parsed.data);
        if (changes.length > 0) {
          const fields = changes.map((c) => `${c.path} ${c.message}`).join('; ');
          throw conflict(`pool ${name} cannot change its scale set in place: ${fields}; delete the pool and create it again`, 'scale_set_change', changes);
        }
      }
      await orNotFound(`pool ${name}`, () =>
        services.deps.client.workflow.getHandle(poolWorkflowId(name)).signal(updatePoolSignal, { settings: parsed.data }),
      );
      services.pools.poolChanged(poolWorkflowId(name), poolMemoOf(parsed.data));
      services.deps.logger.info('pool update sent', { pool: name });
      return json({ pool: parsed.data }, 202);
    },
  },
  {
    method: 'DELETE',
    path: '/api/v1/pools/:name',
    auth: 'admin',
    doc: {
      tag: TAG,
      summary: 'Drain and delete a pool: idle runners leave now, busy ones when their job ends',
      responses: { 202: 'Delete sent to the pool', 404: 'No such pool' },
    },
    async handle({ params, services }) {
      const name = params.name!;
      await services.bounded(() => describeRunning(services.deps.client, poolWorkflowId(name), `pool ${name}`));
      await orNotFound(`pool ${name}`, () =>
        services.deps.client.workflow.getHandle(poolWorkflowId(name)).signal(deletePoolSignal, { reason: 'deleted through the API' }),
      );
      services.pools.poolDeleted(poolWorkflowId(name));
      services.deps.logger.info('pool delete sent', { pool: name });
      return json({ pool: name, action: 'delete' }, 202);
    },
  },
];
