/** The simulator's webhook targets: round robin over several receivers, and GitHub's "redeliver" of failed deliveries. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { startGitHubSimulator, type GitHubSimulator } from '../../github/simulator/server';

interface Receiver {
  url: string;
  deliveries: string[];
  server: Server;
}

/** Answers `failFirst` deliveries with 503, then 200; records each delivery GUID. */
async function receiver(failFirst = 0): Promise<Receiver> {
  const deliveries: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      deliveries.push(String(req.headers['x-github-delivery']));
      res.writeHead(deliveries.length <= failFirst ? 503 : 200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries, server };
}

let sim: GitHubSimulator | undefined;
const receivers: Receiver[] = [];
afterEach(async () => {
  await sim?.close();
  for (const r of receivers.splice(0)) await new Promise((done) => r.server.close(done));
});

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
