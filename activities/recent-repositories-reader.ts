/**
 * An organisation or enterprise pool's recent repositories, which only the pool knows: where the
 * sweep looks for jobs whose `queued` webhook was lost, and whose organisations' webhooks an
 * enterprise pool's failed deliveries are asked for again through. Asking every such pool at
 * every sweep or webhook refresh kept a worker replaying pools it could not hold in its cache,
 * so each pool's last answer is kept with the digest of it its glance showed then
 * (domain/name-set-digest.ts): while the glance shows the same digest, the list is the same, and
 * the pool is not asked again. A pool without a glance (an older memo) is asked each time.
 */
import type { Client } from '@temporalio/client';
import { recentRepositoriesQuery, type PoolGlance } from '../workflows/pool-messages';
import type { RecentRepository } from '../workflows/recent-repositories';

export class RecentRepositoriesReader {
  private readonly answered = new Map<string, { digest: string; repositories: RecentRepository[] }>();

  constructor(
    private readonly client: Client,
    /** Bound on each query to a pool. */
    private readonly queryTimeoutMs: number,
  ) {}

  /** The pool's recent repositories, most lately first; the query's failure reaches the caller. */
  async of(workflowId: string, glance: PoolGlance | undefined): Promise<RecentRepository[]> {
    const shown = glance?.repositories;
    const digest = shown ? `${shown.count}:${shown.digest}` : undefined;
    const before = this.answered.get(workflowId);
    if (digest !== undefined && before?.digest === digest) return before.repositories;
    const repositories = await this.client.withDeadline(Date.now() + this.queryTimeoutMs, () => this.client.workflow.getHandle(workflowId).query(recentRepositoriesQuery));
    if (digest !== undefined) this.answered.set(workflowId, { digest, repositories });
    return repositories;
  }

  /** Forgets the pools not among these (removed since), so the answers kept stay as many as the pools. */
  keepOnly(workflowIds: ReadonlySet<string>): void {
    for (const workflowId of [...this.answered.keys()]) if (!workflowIds.has(workflowId)) this.answered.delete(workflowId);
  }

  /** Forgets every answer: a pool told of a repository just now may show its new glance only later. */
  forgetAll(): void {
    this.answered.clear();
  }
}
