/** One create attempt, as the attempts after it need to know it: what it registered at GitHub, once it has. */
export interface CreateAttempt {
  githubRunnerId?: number;
  /** Its JIT config, sealed (when the worker seals them for the metadata service). */
  sealedJitConfig?: string;
  /** Its JIT config as minted: kept in this worker's memory only, never in history. */
  encodedJitConfig?: string;
}

/** How long, and how many, unfinished attempts are kept for an attempt that starts after they settled. */
const UNFINISHED_KEPT_MS = 10 * 60_000;
const UNFINISHED_KEPT_MAX = 2_000;

interface Running {
  attempt: CreateAttempt;
  settled: Promise<void>;
}

/**
 * The create attempts running in this worker, one instance name at a time.
 *
 * An attempt cut off at its bound (the inline first attempt) is abandoned by its caller, but
 * what it set going may carry on: a provider that took the request makes the machine anyway.
 * An attempt that started meanwhile looked for the machine before it existed, minted the
 * runner's registration a second time (GitHub's answer to a taken name is to remove the old
 * one) and then got the first attempt's machine, whose agent holds the removed registration.
 * Its runner never came online; the liveness check found it offline minutes later and had it
 * replaced. With thousands of runners starting at once a few dozen went that way.
 *
 * So an attempt waits here until the one before it has settled, then finds its machine and
 * keeps what it registered. An attempt whose caller gave up while it waited does nothing
 * (its signal is aborted). Attempts on other workers are not ordered by this: an abandoned
 * inline attempt's successor is an ordinary activity, which another worker may take. That
 * attempt learns what the abandoned one registered from its failure (sealed) and hands the
 * provider the same registration, so whichever call makes the machine holds it; and the
 * GitHub port refuses to replace a registration whose agent is online.
 */
export class CreateAttempts {
  private readonly latest = new Map<string, Running>();
  /**
   * Attempts that registered the runner but whose caller never had their outcome: they failed,
   * or were cut off at their bound and settled later. The attempt after one usually starts once
   * it has settled (an activity the server dispatches after the cut-off), and finds it here
   * rather than in `latest`. Without it, an inline attempt cut off while its mint was on its
   * way left nothing to its successor, which minted again (measured: 6 % of 5,000 runners).
   * Bounded in time and number: a successor comes within seconds, or not from this worker.
   */
  private readonly unfinished = new Map<string, { attempt: CreateAttempt; until: number }>();

  /**
   * `givenUp`: whether the caller stopped waiting for this attempt (its bound passed). Such an
   * attempt, or one that failed, is kept for the next (see `unfinished`) once it has registered.
   */
  async run<T>(key: string, work: (attempt: CreateAttempt, before: CreateAttempt | undefined) => Promise<T>, givenUp: () => boolean = () => false): Promise<T> {
    this.forgetExpired();
    const before = this.latest.get(key);
    const settledBefore = before ? undefined : this.takeUnfinished(key);
    let settle: () => void = () => undefined;
    const running: Running = { attempt: {}, settled: new Promise<void>((resolve) => (settle = resolve)) };
    this.latest.set(key, running);
    let finished = false;
    try {
      if (before) await before.settled;
      const result = await work(running.attempt, before?.attempt ?? settledBefore);
      finished = !givenUp();
      return result;
    } finally {
      if (!finished && running.attempt.githubRunnerId !== undefined) this.keepUnfinished(key, running.attempt);
      settle();
      if (this.latest.get(key) === running) this.latest.delete(key);
    }
  }

  private keepUnfinished(key: string, attempt: CreateAttempt): void {
    this.unfinished.delete(key);
    this.unfinished.set(key, { attempt, until: Date.now() + UNFINISHED_KEPT_MS });
    this.forgetExpired();
  }

  /** Oldest first (the map keeps insertion order): those past their time, and any over the count. */
  private forgetExpired(): void {
    for (const [oldest, kept] of this.unfinished) {
      if (this.unfinished.size <= UNFINISHED_KEPT_MAX && kept.until > Date.now()) break;
      this.unfinished.delete(oldest);
    }
  }

  private takeUnfinished(key: string): CreateAttempt | undefined {
    const kept = this.unfinished.get(key);
    this.unfinished.delete(key);
    return kept?.attempt;
  }

  /** Attempts running or waiting, for tests. */
  get size(): number {
    return this.latest.size;
  }
}
