/** A failure to report as one line; `exitCode` 2 means the command line itself was wrong. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string): CliError => new CliError(`${message} (see --help)`, 2);

/** The exit codes, as --help and the docs list them. */
export const EXIT_CODES = [
  [0, 'success (runner watch: the runner was deleted)'],
  [1, 'the API refused or failed the request, or could not be reached (the reason is on stderr)'],
  [2, 'the command line is wrong (unknown command or option, missing argument)'],
  [130, 'interrupted with Ctrl-C'],
] as const;

export const interrupted = (): CliError => new CliError('interrupted', 130);
