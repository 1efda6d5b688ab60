/**
 * Every failure the API reports is an HttpError rendered as
 * `{ "error": { "code", "message", "details"? } }`. Anything else thrown by a
 * handler is a bug and becomes a generic 500, so internals never reach callers.
 */
import type { z } from 'zod';

export interface FieldIssue {
  path: string;
  message: string;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string, details?: unknown): HttpError => new HttpError(400, 'bad_request', message, details);
export const notFound = (message: string): HttpError => new HttpError(404, 'not_found', message);
export const conflict = (message: string, code = 'conflict', details?: unknown): HttpError => new HttpError(409, code, message, details);

/** One entry per zod issue, with its dotted field path (`(root)` for the object itself). */
export function fieldIssues(error: z.ZodError, prefix = ''): FieldIssue[] {
  return error.issues.map((issue) => {
    const path = [prefix, issue.path.map(String).join('.')].filter(Boolean).join('.');
    return { path: path || '(root)', message: issue.message };
  });
}

export function validationError(error: z.ZodError, what: string, prefix = ''): HttpError {
  const issues = fieldIssues(error, prefix);
  const summary = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return new HttpError(400, 'validation_failed', `invalid ${what}: ${summary}`, issues);
}
