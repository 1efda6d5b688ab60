import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleGitHubWebhook } from '../../../api/webhooks/github';
import { RecentDeliveries } from '../../../api/webhooks/recent-deliveries';
import { RecordingSink } from './recording-sink';

export interface ReceivedDelivery {
  headers: IncomingMessage['headers'];
  body: string;
  status: number;
  result: unknown;
}

/** A local webhook endpoint running the real intake, recording what arrived and what it answered. */
export async function startWebhookReceiver(secret: string, sink = new RecordingSink()) {
  const received: ReceivedDelivery[] = [];
  const callbacks: { authorization?: string; body: unknown }[] = [];
  const recent = new RecentDeliveries();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      void (async () => {
        if (req.url === '/callback') {
          callbacks.push({ authorization: req.headers.authorization, body: JSON.parse(body) as unknown });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
        const answer = await handleGitHubWebhook(new Request('http://127.0.0.1/webhooks/github', { method: 'POST', headers, body }), {
          secret,
          sink,
          recentDeliveries: recent,
        });
        const text = await answer.text();
        received.push({ headers: req.headers, body, status: answer.status, result: JSON.parse(text) as unknown });
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/webhooks/github`,
    callbackUrl: `${base}/callback`,
    sink,
    received,
    callbacks,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
