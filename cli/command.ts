import type { ParseArgsConfig } from 'node:util';
import type { ApiClient } from './api-client';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface CommandContext {
  api: ApiClient;
  /** Print JSON instead of tables. */
  json: boolean;
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
  out(text: string): void;
  /** A line for the operator beside the output (stderr): a retry, a warning. */
  notice(text: string): void;
  /** Aborted on Ctrl-C: long-running commands (watch) stop cleanly. */
  signal?: AbortSignal;
}

export interface Command {
  /** e.g. "show NAME". */
  usage: string;
  summary: string;
  options: OptionSpec;
  /** Help lines for the options, beyond the global ones. */
  optionHelp?: string[];
  /** Exact number of positionals. */
  arity: number;
  run(ctx: CommandContext): Promise<void>;
}

export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.out(JSON.stringify(value, null, 2));
}
