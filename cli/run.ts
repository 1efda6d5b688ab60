/**
 * `runnerflow <group> <command> [args] [options]`. Returns the exit code instead
 * of exiting, so tests and embedders can call it.
 */
import { parseArgs } from 'node:util';
import { ApiClient } from './api-client';
import type { Command, OptionSpec } from './command';
import { completionCommands } from './commands/completion';
import { jobCommands } from './commands/jobs';
import { poolCommands } from './commands/pool';
import { runnerCommands } from './commands/runner';
import { livenessCommands } from './commands/liveness';
import { redeliveryCommands } from './commands/redelivery';
import { statusCommands } from './commands/status';
import { sweepCommands } from './commands/sweep';
import { CliError, EXIT_CODES, interrupted, usageError } from './errors';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
  /** Aborted on Ctrl-C. */
  signal?: AbortSignal;
}

/** A group's command named '' runs when the group is named alone (`runnerflow status`). */
const GROUPS: Record<string, Record<string, Command>> = {
  status: statusCommands,
  pool: poolCommands,
  runner: runnerCommands,
  jobs: jobCommands,
  sweep: sweepCommands,
  liveness: livenessCommands,
  redelivery: redeliveryCommands,
};

const spelled = (group: string, command: Command): string => `runnerflow ${group}${command.usage ? ` ${command.usage}` : ''}`;

const GLOBAL_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionSpec;

GROUPS.completion = completionCommands(() => GROUPS, Object.keys(GLOBAL_OPTIONS).map((o) => `--${o}`));

const GLOBAL_HELP = [
  '--url URL                   API base URL (RUNNERFLOW_URL, default http://127.0.0.1:8080)',
  '--token TOKEN               admin token (RUNNERFLOW_ADMIN_TOKEN)',
  '--json                      print JSON instead of tables',
  '-h, --help                  this help',
];

function mainHelp(): string {
  const entries = Object.entries(GROUPS).flatMap(([group, commands]) =>
    Object.values(commands).map((c) => [spelled(group, c), c.summary] as const),
  );
  const width = Math.max(...entries.map(([usage]) => usage.length));
  const lines = ['Usage: runnerflow <group> <command> [arguments] [options]', '', ...entries.map(([usage, summary]) => `  ${usage.padEnd(width)}  ${summary}`)];
  return [...lines, '', 'Options:', ...GLOBAL_HELP.map((l) => `  ${l}`), '', 'Exit codes:', ...exitCodeHelp()].join('\n');
}

const exitCodeHelp = (): string[] => EXIT_CODES.map(([code, meaning]) => `  ${String(code).padEnd(4)}${meaning}`);

function commandHelp(group: string, command: Command): string {
  const options = [...(command.optionHelp ?? []), ...GLOBAL_HELP];
  return [`Usage: ${spelled(group, command)}`, '', command.summary, '', 'Options:', ...options.map((l) => `  ${l}`), '', 'Exit codes:', ...exitCodeHelp()].join('\n');
}

/** The group and command words, wherever the global options stand around them. */
function commandWords(argv: string[]): { words: string[]; rest: string[] } {
  const words: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (words.length < 2 && !arg.startsWith('-')) {
      words.push(arg);
    } else {
      rest.push(arg);
      // Values of the global options given as separate words are not command words.
      if (words.length < 2 && (arg === '--url' || arg === '--token') && i + 1 < argv.length) rest.push(argv[++i]!);
    }
  }
  return { words, rest };
}

async function dispatch(argv: string[], io: CliIo): Promise<void> {
  const { words, rest } = commandWords(argv);
  const [groupName, commandName] = words;
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  if (!groupName) {
    if (wantsHelp || argv.length === 0) return io.stdout(mainHelp());
    throw usageError('missing command');
  }
  const group = GROUPS[groupName];
  if (!group) throw usageError(`unknown command "${groupName}"; expected one of ${Object.keys(GROUPS).join(', ')}`);
  const alone = group[''];
  if (alone) {
    if (wantsHelp) return io.stdout(commandHelp(groupName, alone));
    // Its second word, if any, is an argument (which it takes none of, and says so).
    return runCommand(groupName, alone, commandName === undefined ? rest : [commandName, ...rest], io);
  }
  if (!commandName) {
    if (wantsHelp) return io.stdout(mainHelp());
    throw usageError(`missing ${groupName} command; expected one of ${Object.keys(group).join(', ')}`);
  }
  const command = group[commandName];
  if (!command) throw usageError(`unknown ${groupName} command "${commandName}"; expected one of ${Object.keys(group).join(', ')}`);
  if (wantsHelp) return io.stdout(commandHelp(groupName, command));
  return runCommand(groupName, command, rest, io);
}

async function runCommand(groupName: string, command: Command, rest: string[], io: CliIo): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...command.options }, allowPositionals: true, strict: true });
  } catch (err) {
    // node's own hint about `--` is noise here; keep its first sentence.
    throw usageError((err as Error).message.split(/\.\s/)[0]!.replace(/\.$/, ''));
  }
  if (parsed.positionals.length !== command.arity) {
    throw usageError(`${spelled(groupName, command)}: expected ${command.arity} argument(s), got ${parsed.positionals.length}`);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const url = (values.url as string | undefined) ?? io.env.RUNNERFLOW_URL ?? 'http://127.0.0.1:8080';
  const token = (values.token as string | undefined) ?? io.env.RUNNERFLOW_ADMIN_TOKEN;
  await command.run({
    api: new ApiClient({ url, token, fetch: io.fetch, ...(io.signal ? { signal: io.signal } : {}) }),
    json: values.json === true,
    positionals: parsed.positionals,
    values,
    out: io.stdout,
    notice: io.stderr,
    ...(io.signal ? { signal: io.signal } : {}),
  });
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    await dispatch(argv, io);
    return 0;
  } catch (caught) {
    // Whatever a cancelled request or wait failed with, the cause was Ctrl-C.
    const err = io.signal?.aborted ? interrupted() : caught;
    if (err instanceof CliError) {
      io.stderr(`error: ${err.message}`);
      return err.exitCode;
    }
    io.stderr(`error: ${(err as Error).message}`);
    return 1;
  }
}
