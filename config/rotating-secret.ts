/**
 * A secret that may be replaced while the process runs. A secret given as a file is rotated in
 * place: a Kubernetes secret volume swaps its files, a Vault agent or a systemd credential
 * rewrites them, and an operator replacing an expired personal access token writes the new one
 * over the old. Read once at start, every worker would go on presenting the old value, refused,
 * until someone restarted it; so the file is looked at again, at most every `recheckMs`, and read
 * again only when it changed. An environment variable cannot change under a running process, so
 * a secret given as one is read once.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolveSecret } from './load';
import type { SecretRef } from './schema';

export interface SecretReading {
  value: string;
  /** The value differs from the one the previous reading returned. */
  changed: boolean;
  /** The file changed but could not be read (half-way through its replacement): the last value is kept. */
  problem?: string;
}

export interface RotatingSecretOptions {
  /**
   * An empty file reads as no value, not as a file half-way through its replacement: for a secret
   * whose absence is a state of its own (the previous webhook secret once a rotation is over).
   */
  emptyMeansNone?: boolean;
}

export class RotatingSecret {
  private value: string;
  private stamp: string | undefined;
  private checkedAt: number;
  /** Read the file at the next look even if it looks the same: a same-sized rewrite within a clock tick keeps its stamp. */
  private refused = false;

  /** Throws a ConfigError, naming where, when the secret cannot be read at all. */
  constructor(
    private readonly ref: SecretRef,
    private readonly env: NodeJS.ProcessEnv,
    private readonly recheckMs: number,
    private readonly now: () => number = Date.now,
    private readonly options: RotatingSecretOptions = {},
  ) {
    this.stamp = this.stampOfFile();
    this.value = this.readValue();
    this.checkedAt = now();
  }

  read(): SecretReading {
    if (!('file' in this.ref) || (!this.refused && this.now() - this.checkedAt < this.recheckMs)) return { value: this.value, changed: false };
    this.checkedAt = this.now();
    const stamp = this.stampOfFile();
    if (stamp === this.stamp && !this.refused) return { value: this.value, changed: false };
    this.refused = false;
    let next: string;
    try {
      next = this.readValue();
    } catch (err) {
      // The stamp is left as it was, so the next look reads the file again.
      return { value: this.value, changed: false, problem: (err as Error).message };
    }
    this.stamp = stamp;
    const changed = next !== this.value;
    this.value = next;
    return { value: next, changed };
  }

  /** The next reading looks at the file whatever the interval: the value was just refused. */
  recheckSoon(): void {
    this.refused = true;
  }

  private readValue(): string {
    if (this.options.emptyMeansNone && 'file' in this.ref && fileIsBlank(this.ref.file)) return '';
    return resolveSecret(this.ref, this.env) ?? '';
  }

  /**
   * What changes when the file is replaced: a swapped symlink or a rename gives another inode, an
   * in-place write another size or time. Following symlinks is what a secret volume needs.
   */
  private stampOfFile(): string | undefined {
    if (!('file' in this.ref)) return undefined;
    try {
      const stat = statSync(this.ref.file);
      return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch {
      return undefined;
    }
  }
}

function fileIsBlank(file: string): boolean {
  try {
    return readFileSync(file, 'utf8').trim() === '';
  } catch {
    return false;
  }
}
