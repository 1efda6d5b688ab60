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
