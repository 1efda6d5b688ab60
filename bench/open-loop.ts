/**
 * An open-loop HTTP load generator on its own thread: requests leave at a fixed
 * rate whatever the server's answers do (as GitHub's deliveries do), so a slow
 * server shows as latency and errors, not as a politely lower rate. The
 * thread keeps its own event loop, so the server under test (in the main
 * thread) does not delay the clock that timestamps its answers.
 */
import { Worker } from 'node:worker_threads';

export interface OpenLoopRequest {
  headers: Record<string, string>;
  body: string;
}

export interface OpenLoopResult {
  latenciesMs: number[];
  /** When each answered request was sent, in ms from the first; same order as latenciesMs. */
  sentAtMs: number[];
  statuses: Record<string, number>;
  /** Requests that had no answer within the timeout (GitHub gives up after 10 s). */
  timeouts: number;
  sent: number;
  elapsedMs: number;
}

// Plain JavaScript: a worker thread does not go through tsx.
const SENDER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { createHmac } = require('node:crypto');
const { url, secret, rate, seconds, timeoutMs, requests, keepAlive } = workerData;
const agent = new http.Agent({ keepAlive: keepAlive !== false, maxSockets: 512 });
const target = new URL(url);
const latencies = [];
const sentAt = [];
const statuses = {};
let timeouts = 0, sent = 0, pending = 0;
function send(req) {
  const body = Buffer.from(req.body);
  const headers = { ...req.headers, 'content-type': 'application/json', 'content-length': body.length,
    'x-hub-signature-256': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex') };
  const started = performance.now();
  pending += 1; sent += 1;
  let done = false;
  const finish = (status) => { if (done) return; done = true; pending -= 1; statuses[status] = (statuses[status] || 0) + 1;
    if (status !== 'timeout' && status !== 'error') { latencies.push(performance.now() - started); sentAt.push(started - begin); } };
  const r = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers, agent, timeout: timeoutMs }, (res) => {
    res.resume(); res.on('end', () => finish(String(res.statusCode)));
  });
  r.on('timeout', () => { timeouts += 1; finish('timeout'); r.destroy(); });
  r.on('error', () => finish('error'));
  r.end(body);
}
const total = Math.round(rate * seconds);
const begin = performance.now();
let next = 0;
function tick() {
  const due = Math.min(total, Math.floor(((performance.now() - begin) / 1000) * rate) + 1);
  while (next < due) send(requests[next++ % requests.length]);
  if (next < total) setTimeout(tick, 2);
  else drain();
}
function drain() {
  if (pending > 0) return setTimeout(drain, 10);
  parentPort.postMessage({ latenciesMs: latencies, sentAtMs: sentAt, statuses, timeouts, sent, elapsedMs: performance.now() - begin });
  agent.destroy();
}
tick();
`;

/**
 * Sends `requests` (cycled, each signed with `secret` as GitHub signs
 * deliveries) at `rate` per second for `seconds`.
 */
export function openLoop(options: {
  url: string;
  secret: string;
  rate: number;
  seconds: number;
  timeoutMs: number;
  requests: OpenLoopRequest[];
  /** false: a new connection per request, as a proxy without upstream keep-alive (nginx's default) sends them. */
  keepAlive?: boolean;
}): Promise<OpenLoopResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(SENDER, { eval: true, workerData: options });
    worker.once('message', (result: OpenLoopResult) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}
