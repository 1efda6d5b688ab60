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

/**
 * The API answered with an error (`status`, and its `code` when the body had one), or
 * could not be reached at all (no `status`).
 */
export class ApiError extends CliError {
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** Worth asking again: the server or something in front of it failed, or nothing answered. */
  get transient(): boolean {
    return this.status === undefined || this.status >= 500;
  }
}

export const usageError = (message: string): CliError => new CliError(`${message} (see --help)`, 2);

/** The exit codes, as --help and the docs list them. */
export const EXIT_CODES = [
  [0, 'success (runner watch: the runner was deleted)'],
  [1, 'the API refused or failed the request, or could not be reached (the reason is on stderr)'],
  [2, 'the command line is wrong (unknown command or option, missing argument)'],
  [3, 'status: a check is failing (the output says which, and what to do)'],
  [130, 'interrupted with Ctrl-C'],
] as const;

export const interrupted = (): CliError => new CliError('interrupted', 130);
