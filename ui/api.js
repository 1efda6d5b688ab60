// @ts-check
/** The REST API as the page uses it: the admin token from this tab's session, errors as ApiError. */

const TOKEN_KEY = 'runnerflow.adminToken';

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }

  get unauthorized() {
    return this.status === 401 || this.status === 403;
  }
}

export const session = {
  /** @returns {string | null} */
  token: () => sessionStorage.getItem(TOKEN_KEY),
  /** @param {string} token */
  signIn: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {string | null} [token] defaults to the session's token
 * @returns {Promise<any>}
 */
export async function api(method, path, body, token = session.token()) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, 'unreachable', `cannot reach the runnerflow API: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await response.text();
  /** @type {any} */
  let payload;
  try {
    payload = text ? JSON.parse(text) : undefined;
  } catch {
    payload = undefined;
  }
  if (!response.ok) {
    const error = payload?.error;
    throw new ApiError(
      response.status,
      typeof error?.code === 'string' ? error.code : 'http_error',
      typeof error?.message === 'string' ? error.message : `${method} ${path} failed with HTTP ${response.status}`,
    );
  }
  return payload;
}

/** @param {string} name */
export const enc = (name) => encodeURIComponent(name);
