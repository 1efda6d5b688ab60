/**
 * Follows one runner: prints its transitions (and runner status changes) as
 * they happen, until it is deleted or the caller aborts (Ctrl-C).
 */
import type { InstanceState } from '../workflows/messages';
import type { ApiClient } from './api-client';

export interface WatchOptions {
  api: ApiClient;
  name: string;
  intervalMs: number;
  json: boolean;
  out(text: string): void;
  signal?: AbortSignal;
}

export type WatchEnd = 'deleted' | 'aborted';

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // An abort that came while a request was in flight has already fired its event: waiting for it would take the whole interval.
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function watchRunner(options: WatchOptions): Promise<WatchEnd> {
  const { api, name, json, out, signal } = options;
  const path = `/api/v1/runners/${encodeURIComponent(name)}`;
  let printed = 0;
  let headerShown = json;
  let runnerStatus: string | undefined;
  const line = (at: string, what: string, reason?: string) => out(`${at}  ${what}${reason ? `  (${reason})` : ''}`);
  for (;;) {
    if (signal?.aborted) return 'aborted';
    const state = await api.get<InstanceState>(path);
    if (!headerShown) out(`runner ${state.name} (pool ${state.pool}, provider ${state.provider})`);
    headerShown = true;
    for (const t of state.transitions.slice(printed)) {
      if (json) out(JSON.stringify({ runner: state.name, ...t }));
      else line(t.at, `${t.from} -> ${t.to}`, t.reason);
    }
    printed = Math.max(printed, state.transitions.length);
    if (state.runnerStatus !== runnerStatus) {
      if (json) out(JSON.stringify({ runner: state.name, runnerStatus: state.runnerStatus, ...(state.jobId !== undefined ? { jobId: state.jobId } : {}) }));
      else line(new Date().toISOString(), `runner status ${state.runnerStatus}${state.jobId !== undefined ? ` (job ${state.jobId})` : ''}`);
      runnerStatus = state.runnerStatus;
    }
    if (state.status === 'deleted') {
      if (!json) out(`runner ${state.name} is deleted${state.forced ? ' (forced)' : ''}${state.leaked ? `; its machine is not confirmed gone, and cleanup/${state.name} retries the delete until it is` : ''}`);
      return 'deleted';
    }
    await sleep(options.intervalMs, signal);
  }
}
