// @ts-check
/** A tiny element builder and the formatting the views share. */

/**
 * @typedef {string | number | Node | null | undefined | false} Child
 * @param {string} tag
 * @param {Record<string, unknown>} [attrs] `on*` functions become listeners, booleans toggle attributes
 * @param {...(Child | Child[])} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    else if (key === 'class') el.className = String(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/**
 * Replaces the children of `parent`.
 * @param {HTMLElement} parent
 * @param {...(Node | string)} nodes
 */
export function mount(parent, ...nodes) {
  parent.replaceChildren(...nodes);
}

/** @param {string} text */
export const empty = (text) => h('p', { class: 'empty' }, text);

/** @param {number} ms */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours}h ${m % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/**
 * Time since `iso`, kept current by `tickAges` without redrawing the table around it.
 * @param {string | undefined | null} iso
 */
export const ago = (iso) => (iso ? h('span', { 'data-since': iso }, duration(Date.now() - Date.parse(iso))) : '–');

export function tickAges() {
  for (const el of document.querySelectorAll('[data-since]')) {
    el.textContent = duration(Date.now() - Date.parse(el.getAttribute('data-since') ?? ''));
  }
}

/** @param {string | undefined | null} iso */
export function clock(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return h('time', { datetime: iso, title: d.toLocaleString() }, d.toLocaleTimeString());
}

/**
 * A coloured status label; the colour comes from the value, the text always says it.
 * @param {string | null | undefined} value
 * @param {string} [kind]
 */
export const badge = (value, kind = 'status') => h('span', { class: `badge ${kind}-${String(value ?? 'unknown')}` }, String(value ?? 'unknown'));

/**
 * @param {string[]} headers
 * @param {HTMLElement[]} rows
 * @param {string} caption read by screen readers
 */
export function table(headers, rows, caption) {
  return h(
    'table',
    {},
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows),
  );
}
