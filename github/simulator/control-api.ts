/**
 * `/_sim/...`: the simulator's control endpoints, so tests, benchmarks and the
 * runner-agent CLI in other processes can drive it. Not part of GitHub's API.
 */
import { z } from 'zod';
import { AgentError } from './agents';
import type { SimResponse } from './http-util';
import type { GitHubSimulator } from './server';
import { FAULT_KINDS, type SimFault } from './faults';

const operationName = z.string().min(1);
const queueJobSchema = z.object({
  repository: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'owner/repo').optional(),
  labels: z.array(z.string().min(1)).min(1),
  durationMs: z.number().int().min(0).optional(),
  conclusion: z.enum(['success', 'failure', 'cancelled', 'skipped', 'timed_out', 'neutral']).optional(),
  name: z.string().optional(),
  workflowName: z.string().optional(),
  event: z.enum(['push', 'schedule', 'workflow_dispatch']).optional(),
});
const startAgentSchema = z.object({
  jitConfig: z.string().min(1),
  callbackUrl: z.string().url().optional(),
  instanceToken: z.string().min(1).optional(),
});
const faultSchema = z
  .object({
    kind: z.enum(FAULT_KINDS as [SimFault['kind'], ...SimFault['kind'][]]),
    operation: operationName.optional(),
    action: z.enum(['queued', 'in_progress', 'completed']).optional(),
    times: z.number().int().min(1).optional(),
    forMs: z.number().int().min(1).optional(),
    ms: z.number().int().min(0).optional(),
    status: z.number().int().min(400).max(599).optional(),
    resetInMs: z.number().int().min(0).optional(),
    retryAfterSeconds: z.number().int().min(0).nullable().optional(),
    messageType: z.string().min(1).optional(),
    restOfJob: z.boolean().optional(),
    repository: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'must be owner/name').optional(),
  })
  .refine((f) => f.kind !== 'latency' || f.ms !== undefined, { message: 'latency needs ms', path: ['ms'] })
  .refine((f) => f.kind !== 'delay-webhooks' || f.ms !== undefined, { message: 'delay-webhooks needs ms', path: ['ms'] })
  .refine((f) => f.kind !== 'primary-rate-limit' || f.resetInMs !== undefined, { message: 'primary-rate-limit needs resetInMs', path: ['resetInMs'] })
  .refine((f) => f.kind !== 'unreadable-repository' || f.repository !== undefined, { message: 'unreadable-repository needs repository', path: ['repository'] });
const webhookSchema = z.object({ url: z.string().url().optional(), urls: z.array(z.string().url()).optional(), secret: z.string().optional() });

const invalid = (error: z.ZodError): SimResponse => ({
  status: 400,
  body: { error: { code: 'invalid_request', message: error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ') } },
});
const notFound = (what: string): SimResponse => ({ status: 404, body: { error: { code: 'not_found', message: `${what} not found` } } });

export async function handleControl(sim: GitHubSimulator, method: string, path: string, query: URLSearchParams, body: unknown): Promise<SimResponse> {
  const parts = path.split('/').filter(Boolean).slice(1);
  const [resource, id, sub] = parts;
  const route = `${method} ${resource ?? ''}${id ? '/:id' : ''}${sub ? `/${sub}` : ''}`;
  switch (route) {
    case 'GET stats':
      return { status: 200, body: sim.stats() };
    case 'GET runners':
      return { status: 200, body: sim.runners() };
    case 'GET jobs':
      return { status: 200, body: sim.jobs() };
    case 'GET scale-sets':
      return { status: 200, body: sim.scaleSets() };
    case 'POST runner-groups': {
      const parsed = z.object({ name: z.string().min(1) }).safeParse(body);
      return parsed.success ? { status: 201, body: { id: sim.addRunnerGroup(parsed.data.name) } } : invalid(parsed.error);
    }
    case 'GET deliveries':
      return { status: 200, body: sim.deliveries() };
    case 'POST deliveries/:id':
      // Only `/_sim/deliveries/failed`: redeliver every failed delivery.
      return id === 'failed' ? { status: 200, body: { redelivered: sim.redeliverFailedWebhooks() } } : notFound(`delivery action ${id}`);
    case 'POST jobs': {
      const parsed = queueJobSchema.safeParse(body);
      return parsed.success ? { status: 201, body: sim.queueJob(parsed.data) } : invalid(parsed.error);
    }
    case 'POST jobs/:id/cancel':
      return sim.cancelJob(Number(id)) ? { status: 200, body: { cancelled: true } } : notFound(`queued job ${id}`);
    case 'GET agents':
      return { status: 200, body: sim.agents() };
    case 'POST agents': {
      const parsed = startAgentSchema.safeParse(body);
      if (!parsed.success) return invalid(parsed.error);
      try {
        const agent = await sim.startAgent(parsed.data);
        return { status: 201, body: { id: agent.id, runnerId: agent.runnerId, runnerName: agent.runnerName, state: agent.state } };
      } catch (err) {
        if (err instanceof AgentError) return { status: err.status, body: { error: { code: 'agent_rejected', message: err.message } } };
        throw err;
      }
    }
    case 'GET agents/:id': {
      const agent = sim.agents().find((a) => a.id === id);
      return agent ? { status: 200, body: agent } : notFound(`agent ${id}`);
    }
    case 'GET agents/:id/wait': {
      const timeoutMs = Math.min(60_000, Math.max(0, Number(query.get('timeoutMs') ?? 25_000) || 0));
      const state = await sim.waitForAgent(id ?? '', timeoutMs);
      return state ? { status: 200, body: { state } } : notFound(`agent ${id}`);
    }
    case 'POST agents/:id/crash': {
      const failJobAfterMs = (body as { failJobAfterMs?: unknown } | undefined)?.failJobAfterMs;
      const options = typeof failJobAfterMs === 'number' && failJobAfterMs >= 0 ? { failJobAfterMs } : {};
      return sim.crashAgent(id ?? '', options) ? { status: 200, body: { crashed: true } } : notFound(`running agent ${id}`);
    }
    case 'DELETE agents/:id':
      return sim.stopAgent(id ?? '') ? { status: 204 } : notFound(`agent ${id}`);
    case 'POST faults': {
      const parsed = faultSchema.safeParse(body);
      if (!parsed.success) return invalid(parsed.error);
      sim.setFault(parsed.data as SimFault);
      return { status: 201, body: parsed.data };
    }
    case 'DELETE faults':
      sim.clearFaults();
      return { status: 204 };
    case 'PUT webhook': {
      const parsed = webhookSchema.safeParse(body);
      if (!parsed.success) return invalid(parsed.error);
      sim.setWebhook(parsed.data);
      return { status: 204 };
    }
    default:
      return { status: 404, body: { error: { code: 'not_found', message: `no control endpoint ${method} ${path}` } } };
  }
}
