/** The REST API as the CLI uses it: JSON in, JSON out, the API's error message on failure. */
import { CliError } from './errors';

export interface ApiClientOptions {
  url: string;
  token?: string;
  fetch?: typeof fetch;
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
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach the runnerflow API at ${this.base}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await response.text();
    let payload: unknown;
    try {
      payload = text ? JSON.parse(text) : undefined;
    } catch {
      payload = undefined;
    }
    if (!response.ok) {
      const message = (payload as { error?: { message?: unknown } } | undefined)?.error?.message;
      throw new CliError(typeof message === 'string' ? message : `${method} ${path} failed with HTTP ${response.status}`);
    }
    return payload as T;
  }
}
