/** The simulator's webhook targets: round robin over several receivers, and GitHub's "redeliver" of failed deliveries. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';

interface Receiver {
  url: string;
  deliveries: string[];
  /** Each delivery's `action`, in the order they arrived. */
  actions: string[];
  server: Server;
}

/** Answers `failFirst` deliveries with 503, then 200; records each delivery GUID and action. */
async function receiver(failFirst = 0): Promise<Receiver> {
  const deliveries: string[] = [];
  const actions: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      deliveries.push(String(req.headers['x-github-delivery']));
      actions.push((JSON.parse(body) as { action: string }).action);
      res.writeHead(deliveries.length <= failFirst ? 503 : 200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries, actions, server };
}

let sim: GitHubSimulator | undefined;
const receivers: Receiver[] = [];
afterEach(async () => {
  await sim?.close();
  for (const r of receivers.splice(0)) await new Promise((done) => r.server.close(done));
});

/** A simulator delivering to one receiver, and its control API's fault endpoint. */
async function delivering(): Promise<{ hook: Receiver; sim: GitHubSimulator; control: (fault: unknown) => Promise<Response> }> {
  const hook = await receiver();
  receivers.push(hook);
  const started = await startGitHubSimulator({ onError: () => undefined, webhookUrl: hook.url });
  sim = started;
  const control = (fault: unknown) => fetch(`${started.controlUrl}/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fault) });
  return { hook, sim: started, control };
}

it('spreads deliveries round robin over several receivers and redelivers the failed ones with their GUID', async () => {
  const healthy = await receiver();
  const flaky = await receiver(1);
  receivers.push(healthy, flaky);
  sim = await startGitHubSimulator({ onError: () => undefined });
  const control = (method: string, path: string, body?: unknown) =>
    fetch(`${sim!.controlUrl}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  expect((await control('PUT', '/webhook', { urls: [healthy.url, flaky.url] })).status).toBe(204);

  for (let i = 0; i < 4; i++) sim.queueJob({ repository: 'octo-org/app', labels: ['linux'] });
  await sim.webhooksIdle();
  expect(healthy.deliveries).toHaveLength(2);
  expect(flaky.deliveries).toHaveLength(2);
  const failed = sim.deliveries().filter((d) => d.status === 503);
  expect(failed.map((d) => d.url)).toEqual([flaky.url]);

  const res = await control('POST', '/deliveries/failed');
  expect(await res.json()).toEqual({ redelivered: 1 });
  await sim.webhooksIdle();
  expect([...healthy.deliveries, ...flaky.deliveries].filter((id) => id === failed[0]!.id)).toHaveLength(2);
  expect(sim.redeliverFailedWebhooks()).toBe(0);
});

it("lists a repository's and an organisation's webhook with only their own deliveries; an unreachable receiver's delivery is kept for redelivery", async () => {
  const hook = await receiver();
  receivers.push(hook);
  sim = await startGitHubSimulator({ onError: () => undefined, webhookUrl: hook.url });
  const call = async (method: string, path: string): Promise<{ status: number; json: unknown }> => {
    const res = await fetch(sim!.url + path, { method, headers: { authorization: 'Bearer sim-token', accept: 'application/vnd.github+json' } });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
  };

  sim.setFault({ kind: 'unreachable-webhooks', action: 'queued', times: 1 });
  sim.queueJob({ repository: 'octo-org/app', labels: ['nobody-has-this'] });
  sim.queueJob({ repository: 'octo-org/other', labels: ['nobody-has-this'] });
  sim.queueJob({ repository: 'elsewhere/app', labels: ['nobody-has-this'] });
  await sim.webhooksIdle();
  expect(hook.deliveries).toHaveLength(2);

  const [listed] = (await call('GET', '/repos/octo-org/app/hooks')).json as { id: number; config: { url: string }; events: string[] }[];
  expect(listed).toMatchObject({ config: { url: hook.url }, events: ['workflow_job'] });
  const deliveries = async (path: string) => ((await call('GET', `${path}/hooks/${listed!.id}/deliveries`)).json as { id: number; guid: string; status_code: number }[]) ?? [];
  const ofRepo = await deliveries('/repos/octo-org/app');
  expect(ofRepo.map((d) => d.status_code)).toEqual([0]);
  expect((await deliveries('/repos/octo-org/other')).map((d) => d.status_code)).toEqual([200]);
  expect(await deliveries('/orgs/octo-org')).toHaveLength(2);
  expect(await deliveries('/orgs/elsewhere')).toHaveLength(1);
  // Another hook id, or a delivery of another repository: not found.
  expect((await call('GET', `/repos/octo-org/app/hooks/${listed!.id + 1}/deliveries`)).status).toBe(404);
  const other = (await deliveries('/repos/octo-org/other'))[0]!;
  expect((await call('POST', `/repos/octo-org/app/hooks/${listed!.id}/deliveries/${other.id}/attempts`)).status).toBe(404);

  // The failed delivery, asked for again through the repository's webhook, reaches the receiver under its GUID.
  expect((await call('POST', `/repos/octo-org/app/hooks/${listed!.id}/deliveries/${ofRepo[0]!.id}/attempts`)).status).toBe(202);
  await sim.webhooksIdle();
  expect(hook.deliveries).toContain(ofRepo[0]!.guid);
  expect((await deliveries('/repos/octo-org/app')).map((d) => d.status_code)).toEqual([200, 0]);
});

it("sends a delayed delivery late, after the same job's later events, and answers a delay without ms with a 400", async () => {
  const { hook, sim, control } = await delivering();

  const refused = await control({ kind: 'delay-webhooks', action: 'queued' });
  expect(refused.status).toBe(400);
  expect(JSON.stringify(await refused.json())).toContain('ms: delay-webhooks needs ms');

  expect((await control({ kind: 'delay-webhooks', action: 'queued', ms: 300, times: 1 })).status).toBe(201);
  const delayed = sim.queueJob({ repository: 'octo-org/app', labels: ['nobody-has-this'] });
  expect(sim.cancelJob(delayed.id)).toBe(true);
  // The next job's events keep their order: the fault took one delivery.
  const next = sim.queueJob({ repository: 'octo-org/app', labels: ['nobody-has-this'] });
  await sim.webhooksIdle();
  expect(sim.cancelJob(next.id)).toBe(true);
  await sim.webhooksIdle();
  expect(hook.actions).toEqual(['completed', 'queued', 'queued', 'completed']);
  expect(sim.stats().webhooks.delayed).toBe(1);
});

it("loses a job's later events too with restOfJob, and only that job's", async () => {
  const { hook, sim, control } = await delivering();

  const refused = await control({ kind: 'lose-webhooks', restOfJob: 'yes' });
  expect(refused.status).toBe(400);
  expect(JSON.stringify(await refused.json())).toContain('restOfJob');

  expect((await control({ kind: 'lose-webhooks', action: 'queued', restOfJob: true, times: 1 })).status).toBe(201);
  const silenced = sim.queueJob({ repository: 'octo-org/app', labels: ['nobody-has-this'] });
  const heard = sim.queueJob({ repository: 'octo-org/app', labels: ['nobody-has-this'] });
  await sim.webhooksIdle();
  expect(sim.cancelJob(silenced.id)).toBe(true);
  expect(sim.cancelJob(heard.id)).toBe(true);
  await sim.webhooksIdle();
  expect(hook.actions).toEqual(['queued', 'completed']);
  expect(sim.stats().webhooks.lost).toBe(2);
  expect(sim.stats().webhooks.jobsSilenced).toBe(1);
});
