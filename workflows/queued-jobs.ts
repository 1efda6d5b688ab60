/**
 * The jobs a pool holds as queued: what its demand is counted from. Part of the
 * pool's state, so it travels in every continue-as-new and every state query,
 * and both are bounded by the server's 2 MB payload limit. Measured: a pool
 * holding 15,000 queued jobs could no longer answer its state query ("Blob data
 * size exceeds limit"), and its continue-as-new would have failed the same way.
 *
 * So: jobs travel packed (one row of numbers each, their labels and repository
 * written once per distinct value), a view lists only the oldest, and a pool
 * keeps at most MAX_KEPT. More than that only happens when far more jobs wait
 * than the pool can ever run at once; a job beyond it is dropped with a
 * warning, and the sweep routes a job GitHub still has queued again later
 * (repository pools).
 */
import type { QueuedJob } from './pool-messages';

/** About 0.8 MB packed: room to spare under 2 MB beside the rest of the pool's state. */
export const MAX_KEPT = 20_000;
/** Jobs a state query lists; the count covers the rest. */
export const VIEW_LISTED = 200;

/** Carried form: `jobs` holds five numbers per job: id, run id (-1: none), queued at (epoch ms), labels index, repository index (-1: none). */
export interface PackedQueue {
  labels: string[][];
  repositories: string[];
  jobs: number[];
}

interface Kept {
  jobId: number;
  runId?: number;
  labels: string[];
  repository?: string;
  queuedAtMs: number;
}

export class QueuedJobs {
  private readonly jobs = new Map<number, Kept>();
  private readonly labelSets = new Map<string, string[]>();

  constructor(private readonly maxKept = MAX_KEPT) {}

  get size(): number {
    return this.jobs.size;
  }

  has(jobId: number): boolean {
    return this.jobs.has(jobId);
  }

  /** False when the pool already holds `maxKept` jobs: the job is not kept. */
  add(job: QueuedJob, now: number): boolean {
    if (!this.jobs.has(job.jobId) && this.jobs.size >= this.maxKept) return false;
    const queuedAtMs = job.queuedAt !== undefined ? Date.parse(job.queuedAt) : now;
    this.jobs.set(job.jobId, {
      jobId: job.jobId,
      ...(job.runId !== undefined ? { runId: job.runId } : {}),
      labels: this.intern(Array.isArray(job.labels) ? job.labels : []),
      ...(job.repository !== undefined ? { repository: job.repository } : {}),
      queuedAtMs: Number.isFinite(queuedAtMs) ? queuedAtMs : now,
    });
    return true;
  }

  delete(jobId: number): boolean {
    return this.jobs.delete(jobId);
  }

  /** Drops the `count` jobs queued last; returns how many went. */
  dropNewest(count: number): number {
    const ids = [...this.jobs.keys()].slice(Math.max(0, this.jobs.size - count));
    for (const id of ids) this.jobs.delete(id);
    return ids.length;
  }

  /** Takes the oldest `limit` jobs out of the queue. */
  take(limit: number): QueuedJob[] {
    const taken = this.list(limit);
    for (const job of taken) this.jobs.delete(job.jobId);
    return taken;
  }

  /** Drops jobs queued longer than `ttlMs` ago; returns the next moment one expires. */
  expire(now: number, ttlMs: number): number | undefined {
    let next: number | undefined;
    for (const job of this.jobs.values()) {
      const expires = job.queuedAtMs + ttlMs;
      if (expires <= now) this.jobs.delete(job.jobId);
      else if (next === undefined || expires < next) next = expires;
    }
    return next;
  }

  /** The oldest `limit` jobs, as the pool's view lists them. */
  list(limit = VIEW_LISTED): QueuedJob[] {
    const out: QueuedJob[] = [];
    for (const job of this.jobs.values()) {
      if (out.length >= limit) break;
      out.push(unpackOne(job));
    }
    return out;
  }

  pack(): PackedQueue {
    const labelIndex = new Map<string[], number>();
    const repoIndex = new Map<string, number>();
    const packed: PackedQueue = { labels: [], repositories: [], jobs: [] };
    for (const job of this.jobs.values()) {
      let l = labelIndex.get(job.labels);
      if (l === undefined) {
        l = packed.labels.push(job.labels) - 1;
        labelIndex.set(job.labels, l);
      }
      let r = -1;
      if (job.repository !== undefined) {
        r = repoIndex.get(job.repository) ?? -1;
        if (r === -1) {
          r = packed.repositories.push(job.repository) - 1;
          repoIndex.set(job.repository, r);
        }
      }
      packed.jobs.push(job.jobId, job.runId ?? -1, job.queuedAtMs, l, r);
    }
    return packed;
  }

  /** Restores a packed queue, or the list older runs carried. */
  restore(packed: PackedQueue | undefined, listed: QueuedJob[] | undefined, now: number): void {
    for (const job of listed ?? []) this.add(job, now);
    if (!packed) return;
    const { labels, repositories, jobs } = packed;
    for (let i = 0; i + 4 < jobs.length; i += 5) {
      const jobId = jobs[i]!;
      const runId = jobs[i + 1]!;
      const repo = jobs[i + 4]!;
      this.jobs.set(jobId, {
        jobId,
        ...(runId >= 0 ? { runId } : {}),
        labels: this.intern(labels[jobs[i + 3]!] ?? []),
        ...(repo >= 0 && repositories[repo] !== undefined ? { repository: repositories[repo] } : {}),
        queuedAtMs: jobs[i + 2]!,
      });
    }
  }

  /** One array per distinct label set: thousands of jobs of one matrix build share it. */
  private intern(labels: string[]): string[] {
    const key = labels.join('\n');
    let kept = this.labelSets.get(key);
    if (!kept) {
      kept = [...labels];
      this.labelSets.set(key, kept);
    }
    return kept;
  }
}

function unpackOne(job: Kept): QueuedJob {
  return {
    jobId: job.jobId,
    ...(job.runId !== undefined ? { runId: job.runId } : {}),
    labels: job.labels,
    ...(job.repository !== undefined ? { repository: job.repository } : {}),
    queuedAt: new Date(job.queuedAtMs).toISOString(),
  };
}
