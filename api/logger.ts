import type { Logger } from './deps';

/** One JSON line per entry on stderr, for log collectors. */
export function jsonLogger(base: Record<string, unknown> = {}, write: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Logger {
  const entry = (level: string) => (message: string, meta?: Record<string, unknown>) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, message, ...base, ...meta }));
  return { info: entry('info'), warn: entry('warn'), error: entry('error') };
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
