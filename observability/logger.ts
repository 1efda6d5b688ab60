/**
 * The process logger: pino, pretty on a terminal, JSON lines for machines
 * (RUNNERFLOW_LOG_FORMAT=json, and whenever stdout is not a TTY).
 *
 * Secrets are kept out twice over: fields whose name says "secret" are
 * censored by pino's redaction paths, and every string that is logged (the
 * message and any field value, e.g. an error message quoting a request) is
 * scrubbed of values that look like credentials or that were registered as
 * secrets when the config was resolved.
 */
import { pino, type DestinationStream, type Level, type Logger as PinoLogger } from 'pino';
import pretty from 'pino-pretty';
import type { Logger } from '../api/deps';
import { REDACTED, scrubSecrets } from './secret-scrub';

export type { Logger };
export { REDACTED, registerSecret, scrubSecrets } from './secret-scrub';
export type LogFormat = 'json' | 'pretty';


/** Field names that carry a secret wherever they appear. */
const SECRET_FIELDS = [
  'authorization',
  'Authorization',
  'cookie',
  'token',
  'accessToken',
  'adminToken',
  'instanceToken',
  'registrationToken',
  'installationToken',
  'jitConfig',
  'jitconfig',
  'encodedJitConfig',
  'encoded_jit_config',
  'sealedJitConfig',
  'sealedCredential',
  'privateKey',
  'private_key',
  'webhookSecret',
  'previousWebhookSecret',
  'instanceTokenSecret',
  'secret',
  'password',
  'x-hub-signature-256',
  'x-hub-signature',
];

/** The same names at the top level and up to two levels down (headers.authorization, request.headers.authorization). */
export const REDACT_PATHS = SECRET_FIELDS.flatMap((field) =>
  /^[A-Za-z_$][\w$]*$/.test(field) ? [field, `*.${field}`, `*.*.${field}`] : [`*["${field}"]`, `*.*["${field}"]`],
);

function scrubValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) {
    return { type: value.name, message: scrubSecrets(value.message), ...(value.stack ? { stack: scrubSecrets(value.stack) } : {}) };
  }
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = scrubValue(v, depth + 1);
  return out;
}

export function logFormat(env: NodeJS.ProcessEnv = process.env, stdoutIsTty = Boolean(process.stdout.isTTY)): LogFormat {
  const asked = env.RUNNERFLOW_LOG_FORMAT?.toLowerCase();
  if (asked === 'json' || asked === 'pretty') return asked;
  return stdoutIsTty ? 'pretty' : 'json';
}

export interface CreateLoggerOptions {
  format?: LogFormat;
  level?: string;
  /** Fields on every line, e.g. { component: 'api' }. */
  base?: Record<string, unknown>;
  /** Where lines go (tests pass a collecting stream); stderr by default. */
  destination?: DestinationStream;
}

/** The root pino logger of a process. */
export function createPinoLogger(options: CreateLoggerOptions = {}): PinoLogger {
  const format = options.format ?? logFormat();
  const level = (options.level ?? process.env.RUNNERFLOW_LOG_LEVEL ?? 'info').toLowerCase();
  const destination =
    format === 'pretty'
      ? pretty({
          destination: options.destination ?? 2,
          colorize: !options.destination && Boolean(process.stderr.isTTY),
          ignore: 'pid,hostname',
          messageKey: 'message',
          translateTime: 'HH:MM:ss.l',
          sync: true,
        })
      : (options.destination ?? pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level,
      base: options.base ?? {},
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => scrubValue(a)) as Parameters<typeof method>);
        },
      },
    },
    destination,
  );
}

/** runnerflow's Logger interface over a pino logger. */
export interface RootLogger extends Logger {
  debug(message: string, meta?: Record<string, unknown>): void;
  child(bindings: Record<string, unknown>): RootLogger;
  pino: PinoLogger;
}

export function asLogger(log: PinoLogger): RootLogger {
  const at = (level: Level) => (message: string, meta?: Record<string, unknown>) => log[level](meta ?? {}, message);
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (bindings) => asLogger(log.child(bindings)),
    pino: log,
  };
}

export function createLogger(options: CreateLoggerOptions = {}): RootLogger {
  return asLogger(createPinoLogger(options));
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
