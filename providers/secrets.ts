import type { BootstrapInstance } from './port';

const REDACTED = '[redacted]';

/** The secret values a bootstrap carries, in every form a provider may echo them back. */
export function bootstrapSecrets(bootstrap: BootstrapInstance): string[] {
  const raw = [bootstrap.instanceToken, bootstrap.jitConfig, bootstrap.registrationToken].filter((s): s is string => Boolean(s));
  return raw.flatMap((s) => [s, Buffer.from(s).toString('base64')]);
}

/** Replaces every secret value in text, longest first so no partial secret survives. */
export function redact(text: string, secrets: readonly string[]): string {
  return [...secrets]
    .filter((s) => s.length >= 4)
    .sort((a, b) => b.length - a.length)
    .reduce((out, secret) => out.split(secret).join(REDACTED), text);
}

/** Keeps error messages and logs bounded: the tail of a long stderr is what explains the failure. */
export function truncate(text: string, max = 2000): string {
  const trimmed = text.trim();
  return trimmed.length <= max ? trimmed : `…${trimmed.slice(trimmed.length - max)}`;
}
