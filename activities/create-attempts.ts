/** One create attempt, as the attempts after it need to know it: what it registered at GitHub, once it has. */
export interface CreateAttempt {
  githubRunnerId?: number;
  /** Its JIT config, sealed (when the worker seals them for the metadata service). */
  sealedJitConfig?: string;
  /** Its JIT config as minted: kept in this worker's memory only, never in history. */
  encodedJitConfig?: string;
}

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

  async run<T>(key: string, work: (attempt: CreateAttempt, before: CreateAttempt | undefined) => Promise<T>): Promise<T> {
    const before = this.latest.get(key);
    let settle: () => void = () => undefined;
    const running: Running = { attempt: {}, settled: new Promise<void>((resolve) => (settle = resolve)) };
    this.latest.set(key, running);
    try {
      if (before) await before.settled;
      return await work(running.attempt, before?.attempt);
    } finally {
      settle();
      if (this.latest.get(key) === running) this.latest.delete(key);
    }
  }

  /** Attempts running or waiting, for tests. */
  get size(): number {
    return this.latest.size;
  }
}
