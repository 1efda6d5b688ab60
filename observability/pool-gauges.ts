/**
 * Gauges of what the pools hold right now, read at scrape time from whichever
 * sources this process registered (an API process registers its view of
 * Temporal). Sources cache their answer, so frequent scrapes cost nothing extra.
 */
import { Gauge } from 'prom-client';
import { registry } from './metrics';

export interface PoolSnapshot {
  pool: string;
  provider: string;
  /** The pool's runners counted by instance status (GARM's names). */
  runnersByStatus: Record<string, number>;
  /** The pool's runners counted by runner (agent) status: idle, active, pending, ... */
  runnersByAgent: Record<string, number>;
  queuedJobs: number;
  /** A scale-set pool's listener: its status, or `absent` when no listener answers. Undefined for other pools. */
  scaleSetListener?: string;
  /** What of a scale-set pool's scale set at GitHub is not as its settings say: `runner_group`, `labels`. */
  scaleSetDiffers?: string[];
}

export type PoolSnapshotSource = () => Promise<PoolSnapshot[]>;

const sources = new Set<PoolSnapshotSource>();

/** Adds a source; the returned function removes it again (when its server closes). */
export function addPoolSnapshotSource(source: PoolSnapshotSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

async function snapshots(): Promise<PoolSnapshot[]> {
  const all = await Promise.all([...sources].map((s) => s().catch(() => [])));
  return all.flat();
}

// One collection shared by the gauges of a scrape: they are collected one after another.
let pending: { at: number; result: Promise<PoolSnapshot[]> } | undefined;
function currentSnapshots(): Promise<PoolSnapshot[]> {
  const now = Date.now();
  if (!pending || now - pending.at > 500) pending = { at: now, result: snapshots() };
  return pending.result;
}

/** A gauge of a pool's runners counted by one of their statuses. */
function runnersByStatus(name: string, help: string, countsOf: (s: PoolSnapshot) => Record<string, number>): void {
  new Gauge({
    name,
    help,
    labelNames: ['pool', 'provider', 'status'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await currentSnapshots()) {
        for (const [status, n] of Object.entries(countsOf(s))) if (n > 0) this.set({ pool: s.pool, provider: s.provider, status }, n);
      }
    },
  });
}

runnersByStatus(
  'runnerflow_runners',
  'Runners a pool holds, by instance status (pending_create, creating, running, pending_delete, deleting, error, ...)',
  (s) => s.runnersByStatus,
);
runnersByStatus(
  'runnerflow_runner_agents',
  'Runners a pool holds, by what the runner agent reported (pending, installing, idle, active, failed, terminated)',
  (s) => s.runnersByAgent,
);

new Gauge({
  name: 'runnerflow_jobs_queued',
  help: 'Jobs routed to a pool that no runner has started yet',
  labelNames: ['pool'],
  registers: [registry],
  async collect() {
    this.reset();
    for (const s of await currentSnapshots()) this.set({ pool: s.pool }, s.queuedJobs);
  },
});

new Gauge({
  name: 'runnerflow_scale_set_listener',
  help: "1 on the status of a scale-set pool's listener (starting, listening, conflict, reconnecting, failing, stopping, stopped; absent when none answers). Only a listening one takes jobs",
  labelNames: ['pool', 'status'],
  registers: [registry],
  async collect() {
    this.reset();
    for (const s of await currentSnapshots()) if (s.scaleSetListener !== undefined) this.set({ pool: s.pool, status: s.scaleSetListener }, 1);
  },
});

new Gauge({
  name: 'runnerflow_scale_set_differs',
  help: "1 while a scale-set pool's scale set at GitHub is not as the pool's settings say: runner_group (a move GitHub refused or could not be asked for yet), name (a rename likewise) or labels (found with labels other than the pool's)",
  labelNames: ['pool', 'field'],
  registers: [registry],
  async collect() {
    this.reset();
    for (const s of await currentSnapshots()) for (const field of s.scaleSetDiffers ?? []) this.set({ pool: s.pool, field }, 1);
  },
});
