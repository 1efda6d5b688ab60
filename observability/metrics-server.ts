/**
 * `/metrics` for a process without the HTTP API (a standalone worker): the same
 * registry the API serves, so lifecycle histograms observed in activities are
 * scraped from the worker that ran them.
 */
import { startHttpServer, type HttpServer } from '../api/node-server';
import { registry } from './metrics';

export async function metricsResponse(): Promise<Response> {
  return new Response(await registry.metrics(), { status: 200, headers: { 'content-type': registry.contentType } });
}

export function serveMetrics(listen: string): Promise<HttpServer> {
  return startHttpServer(async (request) => {
    const { pathname } = new URL(request.url);
    if (request.method === 'GET' && pathname === '/metrics') return metricsResponse();
    return new Response('not found: only GET /metrics is served here\n', { status: 404 });
  }, listen);
}
