/** The REST API as the CLI uses it: JSON in, JSON out, the API's error message on failure. */
import { ApiError, CliError, interrupted } from './errors';

export interface ApiClientOptions {
  url: string;
  token?: string;
  fetch?: typeof fetch;
  /** Aborted on Ctrl-C: a request in flight is cancelled and the call fails as interrupted. */
  signal?: AbortSignal;
}

export class ApiClient {
  private readonly base: string;

  constructor(private readonly options: ApiClientOptions) {
    this.base = options.url.replace(/\/+$/, '');
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PUT', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const signal = this.options.signal;
    if (signal?.aborted) throw interrupted();
    let response: Response;
    let text: string;
    try {
      response = await (this.options.fetch ?? fetch)(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        ...(signal ? { signal } : {}),
      });
      text = await response.text();
    } catch (err) {
      if (signal?.aborted) throw interrupted();
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(`cannot reach the runnerflow API at ${this.base}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    let payload: unknown;
    let isJson = false;
    try {
      payload = JSON.parse(text);
      isJson = true;
    } catch {
      payload = undefined;
    }
    if (!response.ok) {
      const error = (payload as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
      const code = typeof error?.code === 'string' ? error.code : undefined;
      // The API's own hint names the HTTP header; here the flag and the variable are what to set.
      if (response.status === 401 && code === 'unauthenticated' && !this.options.token) {
        throw new ApiError('the API needs the admin token: pass --token TOKEN or set RUNNERFLOW_ADMIN_TOKEN', 401, code);
      }
      const message = typeof error?.message === 'string' ? error.message : `${method} ${path} failed with HTTP ${response.status}`;
      throw new ApiError(message, response.status, code);
    }
    // Something in front of the API (a proxy's login or error page) can answer 2xx with HTML; every command expects JSON.
    if (!isJson) {
      const type = response.headers.get('content-type');
      const what = text.trim() === '' ? ' (empty)' : type ? ` (${type})` : '';
      throw new CliError(
        `the server at ${this.base} answered ${response.status} with a non-JSON body${what} to ${method} ${path}; is --url (RUNNERFLOW_URL) the runnerflow API?`,
      );
    }
    return payload as T;
  }
}
