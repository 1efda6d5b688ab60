import { scopeKey, type GitHubScope } from '../github/port';
import type { RunnerTool } from '../providers/port';

/**
 * Runner downloads change a few times a year; fetching them for every runner
 * would double the GitHub calls per job, so they are kept per scope for a while
 * (GARM caches them too). The promise is what is kept, so a burst of creates
 * shares one request; a failed request is forgotten at once.
 */
export class RunnerToolsCache {
  private readonly entries = new Map<string, { tools: Promise<RunnerTool[]>; expiresAt: number }>();

  constructor(private readonly ttlMs = 15 * 60_000) {}

  get(credentials: string, scope: GitHubScope, fetch: () => Promise<RunnerTool[]>): Promise<RunnerTool[]> {
    const key = `${credentials}|${scopeKey(scope)}`;
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.tools;
    const tools = fetch();
    const entry = { tools, expiresAt: Date.now() + this.ttlMs };
    this.entries.set(key, entry);
    tools.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return tools;
  }
}
