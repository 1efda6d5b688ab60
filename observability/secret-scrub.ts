/**
 * Values that must never reach a log line: credentials recognisable by their
 * shape, and the secrets the config resolved (registered when read).
 */
export const REDACTED = '[redacted]';

/** Credentials recognisable by their shape, wherever they turn up in a string. */
const SECRET_PATTERNS: RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})\b/g,
  /\b(?:bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{20,}/gi,
  // JWTs (instance tokens, app JWTs) and base64 JSON objects such as encoded JIT configs ({" is "ey").
  /\bey[A-Za-z0-9+/_-]{20,}={0,2}(?:\.[A-Za-z0-9_-]+){0,2}/g,
  // Sealed secrets (api/sealed-secret.ts).
  /\bv1\.[A-Za-z0-9_-]{12,}\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]+/g,
];

const knownSecrets = new Set<string>();

/** Registers a secret value so it is scrubbed from every log line (values shorter than 6 characters are too common to scrub). */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 6) knownSecrets.add(value);
}

export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of knownSecrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, REDACTED);
  return out;
}

