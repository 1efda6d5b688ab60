/**
 * Follows one runner: prints its transitions (and runner status changes) as
 * they happen, until it is deleted or the caller aborts (Ctrl-C).
 */
import type { InstanceState } from '../workflows/messages';
import type { ApiClient } from './api-client';
import { ApiError } from './errors';

export interface WatchOptions {
  api: ApiClient;
  name: string;
  intervalMs: number;
  json: boolean;
  out(text: string): void;
  /** Where a failed poll is told (stderr), so --json output stays one object per line. */
  notice?(text: string): void;
  signal?: AbortSignal;
}

/** The longest wait between two asks while the API keeps failing. */
const RETRY_MAX_MS = 10_000;

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
  let failing: { since: number; delayMs: number } | undefined;
  for (;;) {
    if (signal?.aborted) return 'aborted';
    let state: InstanceState;
    try {
      state = await api.get<InstanceState>(path);
    } catch (err) {
      // A restarting API, Temporal slow or a worker gone for a moment: the runner is still there, so keep following it.
      // A refusal (unknown runner, wrong token) stays an error.
      if (!(err instanceof ApiError) || !err.transient || signal?.aborted) throw err;
      const delayMs = Math.min(RETRY_MAX_MS, failing ? failing.delayMs * 2 : Math.max(options.intervalMs, 1_000));
      failing = { since: failing?.since ?? Date.now(), delayMs };
      options.notice?.(`watch: ${err.message}; asking again in ${Math.round(delayMs / 100) / 10}s (Ctrl-C stops)`);
      await sleep(delayMs, signal);
      continue;
    }
    if (failing) {
      options.notice?.(`watch: the API answers again (after ${Math.round((Date.now() - failing.since) / 1000)}s)`);
      failing = undefined;
    }
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
