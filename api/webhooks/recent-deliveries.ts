/**
 * Delivery ids seen lately, oldest forgotten first. A cheap first filter for
 * redeliveries: the workflows are idempotent on their own, this only spares
 * them a signal. Per process, so several API instances each keep their own.
 */
export class RecentDeliveries {
  private readonly ids = new Map<string, true>();

  constructor(private readonly capacity = 10_000) {}

  has(id: string): boolean {
    if (!this.ids.has(id)) return false;
    // Refresh: a delivery redelivered again is the one most worth remembering.
    this.ids.delete(id);
    this.ids.set(id, true);
    return true;
  }

  add(id: string): void {
    this.ids.delete(id);
    this.ids.set(id, true);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.keys().next().value;
      if (oldest !== undefined) this.ids.delete(oldest);
    }
  }

  get size(): number {
    return this.ids.size;
  }
}
