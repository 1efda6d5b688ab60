// @ts-check
/**
 * The one confirmation dialog every action goes through: it asks, runs the
 * action, and stays open with the API's error when the action fails.
 */
import { ApiError } from './api.js';
import { h, mount } from './dom.js';

/**
 * @typedef {{ name: string, label: string, type: 'number' | 'checkbox', value?: number | boolean, hidden?: boolean }} Field
 * @typedef {{
 *   title: string,
 *   message: string,
 *   confirmLabel: string,
 *   danger?: boolean,
 *   fields?: Field[],
 *   run(values: Record<string, any>): Promise<string>,
 *   revealOnError?: (error: ApiError) => string | undefined,
 * }} ConfirmOptions
 */

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * @param {ConfirmOptions} options
 * @param {(message: string) => void} done called with the action's success message
 */
export function confirmAction(options, done) {
  const dialog = /** @type {HTMLDialogElement} */ ($('confirm'));
  const form = /** @type {HTMLFormElement} */ ($('confirm-form'));
  const ok = /** @type {HTMLButtonElement} */ ($('confirm-ok'));
  const error = $('confirm-error');
  $('confirm-title').textContent = options.title;
  $('confirm-message').textContent = options.message;
  ok.textContent = options.confirmLabel;
  ok.className = options.danger ? 'danger' : '';
  ok.disabled = false;
  error.hidden = true;
  error.textContent = '';

  /** @type {Map<string, HTMLInputElement>} */
  const inputs = new Map();
  /** @type {Map<string, HTMLElement>} */
  const wrappers = new Map();
  mount(
    $('confirm-fields'),
    ...(options.fields ?? []).map((field) => {
      const id = `field-${field.name}`;
      const input = /** @type {HTMLInputElement} */ (h('input', { id, name: field.name, type: field.type }));
      if (field.type === 'checkbox') input.checked = field.value === true;
      else input.value = field.value === undefined ? '' : String(field.value);
      inputs.set(field.name, input);
      const wrapper = h('div', { class: `field ${field.type}`, hidden: field.hidden }, ...(field.type === 'checkbox' ? [input, h('label', { for: id }, field.label)] : [h('label', { for: id }, field.label), input]));
      wrappers.set(field.name, wrapper);
      return wrapper;
    }),
  );

  const close = () => {
    form.onsubmit = null;
    dialog.close();
  };
  $('confirm-cancel').onclick = close;
  form.onsubmit = (event) => {
    event.preventDefault();
    /** @type {Record<string, any>} */
    const values = {};
    for (const [name, input] of inputs) values[name] = input.type === 'checkbox' ? input.checked : input.value === '' ? undefined : Number(input.value);
    ok.disabled = true;
    options.run(values).then(
      (message) => {
        close();
        done(message);
      },
      (/** @type {unknown} */ err) => {
        ok.disabled = false;
        error.textContent = err instanceof Error ? err.message : String(err);
        error.hidden = false;
        const reveal = err instanceof ApiError ? options.revealOnError?.(err) : undefined;
        if (reveal) {
          const wrapper = wrappers.get(reveal);
          if (wrapper) wrapper.hidden = false;
          inputs.get(reveal)?.focus();
        }
      },
    );
  };
  dialog.showModal();
  const firstVisible = [...inputs].find(([name]) => !wrappers.get(name)?.hidden)?.[1];
  (firstVisible ?? ok).focus();
}
