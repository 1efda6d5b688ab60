// @ts-check
/** Links into the Temporal Web UI, in the namespace the API works in. */
import { h } from './dom.js';

/** @type {{ webUiUrl: string, namespace: string }} */
const target = { webUiUrl: 'http://127.0.0.1:8233', namespace: 'default' };

/** @param {{ webUiUrl: string, namespace: string }} temporal */
export function setTemporalTarget(temporal) {
  target.webUiUrl = temporal.webUiUrl.replace(/\/+$/, '');
  target.namespace = temporal.namespace;
}

const base = () => `${target.webUiUrl}/namespaces/${encodeURIComponent(target.namespace)}`;

export const workflowsUrl = () => `${base()}/workflows`;

/**
 * A run's history when its run id is known, otherwise the workflow list filtered to the id.
 * @param {string} workflowId
 * @param {string} [runId]
 */
export function workflowUrl(workflowId, runId) {
  if (runId) return `${base()}/workflows/${encodeURIComponent(workflowId)}/${encodeURIComponent(runId)}/history`;
  return `${base()}/workflows?query=${encodeURIComponent(`WorkflowId="${workflowId}"`)}`;
}

/** @param {string} scheduleId */
export const scheduleUrl = (scheduleId) => `${base()}/schedules/${encodeURIComponent(scheduleId)}`;

/**
 * @param {string} url
 * @param {string} what e.g. "workflow pool/linux"
 * @param {string} [text] what the link shows, where one row has more than one
 */
export const temporalLink = (url, what, text = 'Temporal') =>
  h('a', { href: url, target: '_blank', rel: 'noopener', class: 'temporal', 'aria-label': `Open ${what} in the Temporal Web UI` }, `${text} ↗`);
