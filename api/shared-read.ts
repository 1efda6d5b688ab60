/**
 * One read shared by the requests that want it at about the same time. A dashboard's summary is
 * a visibility listing of every pool, plus a query to each pool that has not written its glance
 * yet, and each open dashboard polls on its own. Requests that come while a read is under way, or
 * within `freshMs` after it ended, get its answer: several dashboards then cost what one does.
 * A read that failed is not kept: the next request reads again.
 */
export class SharedRead<T> {
  private current?: { promise: Promise<T>; endedAt?: number };

  constructor(
    private readonly freshMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  read(fetch: () => Promise<T>): Promise<T> {
    const current = this.current;
    if (current && (current.endedAt === undefined || this.now() - current.endedAt < this.freshMs)) return current.promise;
    const entry: { promise: Promise<T>; endedAt?: number } = { promise: fetch() };
    this.current = entry;
    entry.promise.then(
      () => (entry.endedAt = this.now()),
      () => {
        if (this.current === entry) this.current = undefined;
      },
    );
    return entry.promise;
  }
}
