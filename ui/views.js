// @ts-check
/** Pure renderers: data from the API in, elements out. Actions come in as callbacks. */
import { ago, badge, clock, duration, empty, h, table } from './dom.js';
import { scheduleUrl, temporalLink, workflowUrl } from './temporal-links.js';

/**
 * @typedef {{ alive: number, idle: number, busy: number, starting: number, leaving: number }} Counts
 * @typedef {{ name: string, workflowId: string, runId: string, provider?: string, enabled?: boolean, labels?: string[],
 *   minIdleRunners?: number, maxRunners?: number, desired?: number, counts?: Counts, queuedJobs?: number, deleting?: boolean,
 *   mode?: string, error?: string, glanceAt?: string }} PoolSummary
 * @typedef {{ select(name: string): void, toggleEnabled(pool: PoolSummary): void, editSize(pool: PoolSummary): void }} PoolActions
 */

/** @param {PoolSummary} pool */
function poolState(pool) {
  if (pool.error) return badge('unreachable', 'pool');
  if (pool.deleting) return badge('deleting', 'pool');
  return badge(pool.enabled === false ? 'disabled' : 'enabled', 'pool');
}

/** @param {number | undefined} n */
const count = (n) => h('span', { class: n ? 'count' : 'count zero' }, String(n ?? '–'));

/**
 * @param {PoolSummary[]} pools
 * @param {string | undefined} selected
 * @param {PoolActions} actions
 */
export function poolsView(pools, selected, actions) {
  if (pools.length === 0) return empty('No pools yet. Create one with `runnerflow pool create` or POST /api/v1/pools.');
  const rows = pools.map((pool) => {
    const c = pool.counts;
    // Counts from the pool's glance are as it last wrote them: up to a couple of seconds behind a busy pool.
    const asOf = pool.glanceAt ? { title: `as the pool last wrote them, at ${new Date(pool.glanceAt).toLocaleTimeString()}` } : {};
    return h(
      'tr',
      { class: pool.name === selected ? 'selected' : undefined, 'data-pool': pool.name },
      h(
        'th',
        { scope: 'row' },
        h('button', { type: 'button', class: 'link', 'aria-pressed': String(pool.name === selected), 'aria-label': `Show runners of pool ${pool.name}`, onclick: () => actions.select(pool.name) }, pool.name),
        pool.mode === 'scaleSet' && h('span', { class: 'tag' }, 'scale set'),
        pool.error && h('div', { class: 'error small' }, pool.error),
      ),
      h('td', {}, pool.provider ?? '–'),
      h('td', {}, poolState(pool)),
      h('td', asOf, count(pool.desired)),
      h('td', asOf, count(c?.alive)),
      h('td', asOf, count(c?.idle)),
      h('td', asOf, count(c?.busy)),
      h('td', asOf, count(c?.starting)),
      h('td', asOf, count(c?.leaving)),
      h('td', asOf, count(pool.queuedJobs)),
      h('td', {}, `${pool.minIdleRunners ?? '–'} / ${pool.maxRunners ?? '–'}`),
      h(
        'td',
        { class: 'actions' },
        !pool.error &&
          !pool.deleting && [
            h('button', { type: 'button', class: 'secondary', 'aria-label': `${pool.enabled === false ? 'Enable' : 'Disable'} pool ${pool.name}`, onclick: () => actions.toggleEnabled(pool) }, pool.enabled === false ? 'Enable' : 'Disable'),
            h('button', { type: 'button', class: 'secondary', 'aria-label': `Edit size of pool ${pool.name}`, onclick: () => actions.editSize(pool) }, 'Edit size'),
          ],
        temporalLink(workflowUrl(pool.workflowId, pool.runId), `pool ${pool.name}`),
      ),
    );
  });
  return table(['Pool', 'Provider', 'State', 'Desired', 'Alive', 'Idle', 'Busy', 'Starting', 'Leaving', 'Queued', 'Min / Max', 'Actions'], rows, 'Pools with their runner counts');
}

/**
 * Any value as nested definition lists, for blocks whose shape the page does not know (a scale set's).
 * @param {unknown} value
 * @returns {HTMLElement | string}
 */
function genericValue(value) {
  if (value === null || value === undefined) return '–';
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ') || '–';
  if (typeof value === 'object') {
    return h('dl', { class: 'generic' }, Object.entries(value).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, isInstant(k, v) ? clock(new Date(v).toISOString()) : genericValue(v))]));
  }
  return String(value);
}

/**
 * A field named for when something happened (`renameTriedAt`), held as epoch milliseconds: shown
 * as a time, not as a thirteen-digit number.
 * @param {string} key
 * @param {unknown} value
 * @returns {value is number}
 */
const isInstant = (key, value) => /At$/.test(key) && typeof value === 'number' && Number.isFinite(value) && value > 1e12;

/**
 * What an operator needs first of a scale set, above the rest of its listener's view: what it is
 * called and where it is at GitHub, and what of it is not yet as the pool says, with why.
 * @param {Record<string, unknown>} s the listener's view, as the API reports it
 */
function scaleSetHeadline(s) {
  const text = (/** @type {unknown} */ v) => (typeof v === 'string' ? v : undefined);
  const name = text(s.name);
  const nameAtGitHub = text(s.nameAtGitHub) ?? name;
  const group = text(s.runnerGroup);
  const groupAtGitHub = text(s.runnerGroupAtGitHub) ?? group;
  const pending = [
    nameAtGitHub !== name && `renaming it from ${nameAtGitHub} to ${name}`,
    groupAtGitHub !== group && `moving it from runner group ${groupAtGitHub} to ${group}`,
    Array.isArray(s.labelsAtGitHub) && `its labels at GitHub (${s.labelsAtGitHub.join(', ')}) are not the pool's: jobs naming a label it lacks never reach it`,
  ].filter(Boolean);
  return [
    h('p', {}, h('strong', {}, nameAtGitHub ?? '–'), ` · id ${s.scaleSetId ?? '–'} · runner group ${groupAtGitHub ?? '–'} · listener `, badge(text(s.status), 'listener')),
    pending.length > 0 && h('p', { class: 'error small' }, `Not yet as the pool says: ${pending.join('; ')}.`),
    text(s.lastError) && h('p', { class: 'error small' }, `Last error: ${s.lastError}`),
  ];
}

/**
 * @typedef {{ name: string, status: string, runnerStatus: string, phase?: string, jobId?: number, since: string }} PoolRunner
 * @typedef {{ jobId: number, labels: string[], repository?: string, queuedAt?: string }} QueuedJob
 * @typedef {{ name: string, settings: Record<string, any>, runners: PoolRunner[], queuedJobs: QueuedJob[], queuedJobCount?: number, target: number, deleting: boolean, scaleSet?: unknown }} PoolDetail
 * @typedef {{ from: string, to: string, at: string, reason?: string }} Transition
 * @typedef {{ status: string, runnerStatus: string, providerId?: string, githubRunnerId?: number, lastError?: string, transitions: Transition[] }} RunnerState
 * @typedef {{ toggleTimeline(name: string): void, remove(name: string): void, forceRemove(name: string): void }} RunnerActions
 */

/** @param {RunnerState | undefined} state */
function timeline(state) {
  if (!state) return h('p', { class: 'muted' }, 'Loading…');
  const facts = [
    state.providerId && `machine ${state.providerId}`,
    state.githubRunnerId !== undefined && `GitHub runner ${state.githubRunnerId}`,
  ].filter(Boolean);
  return h(
    'div',
    { class: 'timeline' },
    facts.length > 0 && h('p', { class: 'muted' }, facts.join(' · ')),
    state.lastError && h('p', { class: 'error small' }, `Last error: ${state.lastError}`),
    state.transitions.length === 0
      ? h('p', { class: 'muted' }, 'No transitions yet.')
      : h(
          'ol',
          { 'aria-label': 'Status transitions' },
          state.transitions.map((t) => h('li', {}, clock(t.at), ' ', badge(t.from), ' → ', badge(t.to), t.reason ? h('span', { class: 'reason' }, t.reason) : null)),
        ),
  );
}

/**
 * @param {PoolDetail} pool
 * @param {Map<string, { startTime: string, runId: string }>} started from the runner list: age and run id
 * @param {Map<string, RunnerState | undefined>} open runners whose timeline is shown
 * @param {RunnerActions} actions
 */
export function poolDetailView(pool, started, open, actions) {
  const s = pool.settings;
  const scope = s.github?.scope;
  const scopeText = scope ? (scope.kind === 'repo' ? `${scope.owner}/${scope.repo}` : `${scope.kind} ${scope[scope.kind] ?? ''}`) : '–';
  const parts = [
    h(
      'p',
      { class: 'muted' },
      `Labels ${(s.labels ?? []).join(', ')} · GitHub ${scopeText} · image ${s.image ?? '–'} · flavor ${s.flavor ?? '–'} · ${s.ephemeral === false ? 'persistent' : 'ephemeral'} runners · target ${pool.target}`,
    ),
  ];
  // Shown as the API reports it (session, last message id, statistics, desired count), whatever fields it grows.
  if (pool.scaleSet !== undefined) {
    parts.push(
      h(
        'div',
        { class: 'scale-set', role: 'group', 'aria-label': 'Scale set' },
        h('h3', {}, 'Scale set'),
        pool.scaleSet === null || typeof pool.scaleSet !== 'object'
          ? h('p', { class: 'muted' }, 'The scale set listener is not running (starting, or stopped).')
          : [...scaleSetHeadline(/** @type {Record<string, unknown>} */ (pool.scaleSet)), genericValue(pool.scaleSet)],
      ),
    );
  }

  if (pool.runners.length === 0) {
    parts.push(empty(pool.deleting ? 'The pool is being deleted; no runners are left.' : 'No runners right now. They appear here as jobs are queued or when min idle runners is above 0.'));
  } else {
    const rows = pool.runners.flatMap((r) => {
      const known = started.get(r.name);
      const expanded = open.has(r.name);
      const row = h(
        'tr',
        { 'data-runner': r.name },
        h('th', { scope: 'row' }, h('code', {}, r.name)),
        h('td', {}, badge(r.status)),
        h('td', {}, badge(r.runnerStatus, 'runner')),
        h('td', {}, badge(r.phase ?? 'unknown', 'phase')),
        h('td', {}, r.jobId ?? '–'),
        h('td', {}, known ? ago(known.startTime) : '–'),
        h('td', {}, ago(r.since)),
        h(
          'td',
          { class: 'actions' },
          h('button', { type: 'button', class: 'secondary', 'aria-expanded': String(expanded), 'aria-label': `Timeline of ${r.name}`, onclick: () => actions.toggleTimeline(r.name) }, 'Timeline'),
          h('button', { type: 'button', class: 'secondary', 'aria-label': `Delete ${r.name}`, onclick: () => actions.remove(r.name) }, 'Delete'),
          h('button', { type: 'button', class: 'danger', 'aria-label': `Force delete ${r.name}`, onclick: () => actions.forceRemove(r.name) }, 'Force delete'),
          temporalLink(workflowUrl(`runner/${r.name}`, known?.runId), `runner ${r.name}`),
        ),
      );
      return expanded ? [row, h('tr', { class: 'timeline-row' }, h('td', { colspan: '8' }, timeline(open.get(r.name))))] : [row];
    });
    parts.push(table(['Runner', 'Status', 'Runner status', 'Phase', 'Job', 'Age', 'In status for', 'Actions'], rows, `Runners of pool ${pool.name}`));
  }

  parts.push(h('h3', {}, 'Queued jobs'));
  const queuedCount = pool.queuedJobCount ?? pool.queuedJobs.length;
  // A pool lists only its oldest queued jobs; the count says how many wait in all.
  if (queuedCount > pool.queuedJobs.length) parts.push(h('p', {}, `The oldest ${pool.queuedJobs.length} of ${queuedCount} queued jobs.`));
  parts.push(
    pool.queuedJobs.length === 0
      ? empty('No jobs waiting for this pool.')
      : table(
          ['Job', 'Repository', 'Labels', 'Waiting'],
          pool.queuedJobs.map((j) => h('tr', {}, h('td', {}, String(j.jobId)), h('td', {}, j.repository ?? '–'), h('td', {}, j.labels.join(', ')), h('td', {}, ago(j.queuedAt)))),
          `Jobs queued for pool ${pool.name}`,
        ),
  );
  return parts;
}

/**
 * @typedef {{ workflowId: string, status: string } | null} Cleanup
 * @param {Cleanup | undefined} cleanup
 */
function cleanupText(cleanup) {
  if (!cleanup) return 'no clean-up: left to the sweep';
  if (cleanup.status === 'running') return 'clean-up retrying the delete';
  return `clean-up ${cleanup.status} before the machine went: left to the sweep`;
}

/**
 * Force-deleted runners whose machine is not confirmed gone (the API leaves out those whose
 * clean-up has since confirmed it).
 * @param {{ name: string, pool: string | null, provider: string | null, closeTime?: string, startTime: string, runId: string, cleanup?: Cleanup }[]} runners
 */
export function leakedView(runners) {
  if (runners.length === 0) return empty('No leaked machines. A machine a forced delete could not confirm gone shows here until its clean-up or the sweep deletes it.');
  return table(
    ['Runner', 'Pool', 'Provider', 'Force-deleted', 'Machine', 'Links'],
    runners.map((r) =>
      h(
        'tr',
        {},
        h('th', { scope: 'row' }, h('code', {}, r.name)),
        h('td', {}, r.pool ?? '–'),
        h('td', {}, r.provider ?? '–'),
        h('td', {}, clock(r.closeTime)),
        h('td', {}, cleanupText(r.cleanup)),
        h(
          'td',
          {},
          temporalLink(workflowUrl(`runner/${r.name}`, r.runId), `runner ${r.name}`, 'Runner'),
          r.cleanup ? [' ', temporalLink(workflowUrl(r.cleanup.workflowId), `clean-up of ${r.name}`, 'Clean-up')] : [],
        ),
      ),
    ),
    'Leaked machines (RunnerLeaked)',
  );
}

/**
 * Where a job is (`GET /api/v1/jobs/:id`): on a runner, queued with what it waits for, or unmatched with why.
 * @param {any} job
 * @param {(pool: string) => void} showPool
 */
export function jobFoundView(job, showPool) {
  const poolLink = (/** @type {string} */ name) => h('button', { type: 'button', class: 'link', 'aria-label': `Show runners of pool ${name}`, onclick: () => showPool(name) }, name);
  const facts = (/** @type {[string, Node | string | undefined][]} */ rows) =>
    h('dl', { class: 'generic' }, ...rows.filter(([, v]) => v !== undefined && v !== '').flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, /** @type {Node | string} */ (v))]));
  if (job.state === 'running' || job.state === 'finished') {
    const running = job.state === 'running';
    return [
      h('p', {}, h('span', { class: `badge ${running ? 'phase-busy' : 'phase-idle'}` }, job.state), ` Job ${job.jobId} ${running ? 'runs' : 'ran'} on `, h('code', {}, job.runner.name), ' of pool ', poolLink(job.pool), '.'),
      facts([['Runner status', `${job.runner.status} / ${job.runner.runnerStatus}`]]),
    ];
  }
  if (job.state === 'unmatched') {
    return [
      h('p', {}, h('span', { class: 'badge check-warning' }, 'unmatched'), ` No pool took job ${job.jobId}: ${job.reason}.`),
      facts([['Repository', job.repository], ['Labels', job.labels.join(', ')], ['Recorded', clock(job.recordedAt)]]),
    ];
  }
  return [
    h('p', {}, h('span', { class: 'badge phase-starting' }, 'queued'), ` Job ${job.jobId} waits in pool `, poolLink(job.pool), job.ahead !== undefined ? `, behind ${job.ahead} job${job.ahead === 1 ? '' : 's'} queued earlier.` : '.'),
    facts([['Repository', job.repository], ['Labels', job.labels?.join(', ')], ['Queued', job.queuedAt ? clock(job.queuedAt) : undefined]]),
    h('p', { class: 'small' }, 'Waiting for:'),
    h('ul', { class: 'waiting-for' }, ...job.waitingFor.map((/** @type {string} */ reason) => h('li', {}, reason))),
  ];
}

/** @param {{ jobId: number, labels: string[], repository?: string, reason: string, recordedAt?: string }[]} jobs */
export function unmatchedView(jobs) {
  if (jobs.length === 0) return empty('Every queued job found a pool.');
  return table(
    ['Job', 'Repository', 'Labels', 'Reason', 'Recorded'],
    [...jobs].reverse().map((j) => h('tr', {}, h('td', {}, String(j.jobId)), h('td', {}, j.repository ?? '–'), h('td', {}, j.labels.join(', ')), h('td', {}, j.reason), h('td', {}, clock(j.recordedAt)))),
    'Jobs no pool could take, newest first',
  );
}

/**
 * A schedule's state in a few words: paused (and why), or how often it runs and when next.
 * @param {{ scheduled: boolean, paused?: boolean, note?: string, intervalMs?: number, nextRunAt?: string }} view
 */
function scheduleState(view) {
  if (!view.scheduled) return 'no schedule (a worker creates it at start)';
  if (view.paused) return `paused${view.note ? `: ${view.note}` : ''}`;
  return `every ${duration(view.intervalMs ?? NaN)}${view.nextRunAt ? `, next in ${duration(Date.parse(view.nextRunAt) - Date.now())}` : ''}`;
}

/**
 * One schedule: its id, state and Temporal link in a heading, an action beside them, its runs below.
 * @param {string} label
 * @param {{ scheduleId: string, scheduled: boolean, paused?: boolean, note?: string, intervalMs?: number, nextRunAt?: string }} view
 * @param {Node | false | undefined} action
 * @param {Node | Node[]} runs
 */
function scheduleGroup(label, view, action, runs) {
  return h(
    'div',
    { class: 'sweep', role: 'group', 'aria-label': label },
    h(
      'h3',
      {},
      h('code', {}, view.scheduleId),
      ' ',
      h('span', { class: 'muted' }, scheduleState(view)),
      ' ',
      view.scheduled && temporalLink(scheduleUrl(view.scheduleId), `schedule ${view.scheduleId}`),
      ' ',
      action,
    ),
    runs,
  );
}

/**
 * What a sweep run's GitHub side did: registrations no workflow owned removed, jobs whose `queued`
 * webhook was lost routed again, and jobs GitHub had run taken out of a pool's queue.
 * And repositories (or organisations) GitHub refused to the look for lost jobs, which it leaves alone a while.
 * @param {{ registrationsRemoved: number, jobsRequeued: number, jobsDequeued: number, jobIds: number[], unreadable?: string[] } | undefined} github
 */
function atGitHubCell(github) {
  if (!github) return h('td', { title: 'the sweep does not look at GitHub (sweep.githubRunners: false)' }, '–');
  const parts = [`${github.registrationsRemoved} removed`, `${github.jobsRequeued} routed again`, `${github.jobsDequeued} taken out`];
  const titles = [github.jobIds.length > 0 ? `jobs ${github.jobIds.join(', ')}` : 'registrations removed, lost jobs routed again, jobs GitHub had run taken out of a queue'];
  if (github.unreadable?.length) {
    parts.push(`${github.unreadable.length} refused`);
    titles.push(`refused by GitHub (gone, or not the credentials' to read), left alone a while: ${github.unreadable.join(', ')}`);
  }
  return h('td', { class: 'small', title: titles.join('; ') }, parts.join(' · '));
}

/**
 * @typedef {{ workflowId: string, runId: string, scheduledAt: string, status: string, closedAt?: string, error?: string,
 *   result?: { listed: number, owned: number, deleted: number, skipped: number, failed: number, deletedNames: string[],
 *     github?: { registrationsRemoved: number, jobsRequeued: number, jobsDequeued: number, jobIds: number[], unreadable?: string[] } } }} SweepRun
 * @typedef {{ provider: string, scheduleId: string, scheduled: boolean, paused?: boolean, note?: string, intervalMs?: number, nextRunAt?: string, runs: SweepRun[] }} Sweep
 * @param {Sweep[]} sweeps
 * @param {{ sweepNow(provider: string): void }} actions
 */
export function sweepsView(sweeps, actions) {
  if (sweeps.length === 0) return empty('No providers are configured.');
  return sweeps.map((sweep) => {
    const runs =
      sweep.runs.length === 0
        ? empty('No runs yet.')
        : table(
            ['Scheduled', 'Status', 'Listed', 'Owned', 'Deleted', 'Skipped', 'Failed', 'At GitHub', 'Links'],
            sweep.runs.map((run) =>
              h(
                'tr',
                {},
                h('td', {}, clock(run.scheduledAt)),
                h('td', {}, badge(run.status, 'run'), run.error && h('div', { class: 'error small' }, run.error)),
                h('td', {}, run.result?.listed ?? '–'),
                h('td', {}, run.result?.owned ?? '–'),
                h('td', { title: run.result?.deletedNames.join(', ') ?? '' }, run.result?.deleted ?? '–'),
                h('td', {}, run.result?.skipped ?? '–'),
                h('td', {}, run.result?.failed ?? '–'),
                atGitHubCell(run.result?.github),
                h('td', {}, temporalLink(workflowUrl(run.workflowId, run.runId), `sweep run ${run.workflowId}`)),
              ),
            ),
            `Last runs of sweep/${sweep.provider}`,
          );
    return scheduleGroup(
      `Sweep of provider ${sweep.provider}`,
      sweep,
      sweep.scheduled &&
        h('button', { type: 'button', class: 'secondary', 'aria-label': `Sweep provider ${sweep.provider} now`, onclick: () => actions.sweepNow(sweep.provider) }, 'Sweep now'),
      runs,
    );
  });
}

/** What a finding means, in an operator's words. */
const FINDING_TEXT = /** @type {Record<string, string>} */ ({
  machine_gone: 'machine gone',
  machine_stopped: 'machine stopped',
  machine_error: 'machine in error',
  runner_offline: 'runner offline',
  runner_missing: 'runner not registered',
});

/**
 * A count whose names show in its tooltip (a pass lists the first few).
 * @param {number | undefined} n
 * @param {string[] | undefined} names
 */
const namedCount = (n, names) => h('td', { title: names?.join('\n') ?? '' }, count(n));

/**
 * A schedule's last passes: when each ran, how it ended (and which calls failed), the kind's
 * own cells, and a link to the pass in Temporal.
 * @template {{ failures: { target: string, error: string }[] }} R
 * @param {{ scheduleId: string, runs: { workflowId: string, runId: string, scheduledAt: string, status: string, error?: string, result?: R }[] }} view
 * @param {string[]} headers the kind's own columns
 * @param {(result: R | undefined) => Node[]} cells
 * @param {string} what how a pass of this kind is called, for its link
 */
function passesTable(view, headers, cells, what) {
  if (view.runs.length === 0) return empty('No passes yet.');
  return table(
    ['Scheduled', 'Status', ...headers, 'Links'],
    view.runs.map((run) =>
      h(
        'tr',
        {},
        h('td', {}, clock(run.scheduledAt)),
        h(
          'td',
          {},
          badge(run.status, 'run'),
          run.error && h('div', { class: 'error small' }, run.error),
          ...(run.result?.failures ?? []).map((f) => h('div', { class: 'error small' }, `${f.target}: ${f.error}`)),
        ),
        ...cells(run.result),
        h('td', {}, temporalLink(workflowUrl(run.workflowId, run.runId), `${what} ${run.workflowId}`)),
      ),
    ),
    `Last passes of ${view.scheduleId}`,
  );
}

/**
 * @typedef {{ instances: number, listings: number, findings: { name: string, finding: string }[], orphaned: string[], uncounted: string[],
 *   poolsReset: { pool: string, resetTo: number }[], stuckRunnersEnded: string[], poolsAskedToLook?: { pool: string, why: string }[],
 *   counts: { findings: number, orphaned: number, uncounted: number, poolsReset: number, stuckRunnersEnded: number, poolsAskedToLook?: number },
 *   failures: { target: string, error: string }[] }} LivenessResult
 * @typedef {{ provider: string, check: 'machines' | 'github', scheduleId: string, scheduled: boolean, paused?: boolean, note?: string,
 *   intervalMs?: number, nextRunAt?: string,
 *   runs: { workflowId: string, runId: string, scheduledAt: string, status: string, error?: string, result?: LivenessResult }[] }} Liveness
 * @param {Liveness[]} checks
 */
export function livenessView(checks) {
  if (checks.length === 0) return empty('No providers are configured.');
  return checks.map((c) => {
    // Stuck workflows are the machine check's to heal: the GitHub check's passes never reset or end one.
    const machines = c.check === 'machines';
    const runs = passesTable(
      c,
      ['Runners', 'Found', 'Pool gone', 'Not counted', ...(machines ? ['Pools reset', 'Stuck runners ended', 'Pools asked to look'] : [])],
      (result) => [
        h('td', {}, result?.instances ?? '–'),
        namedCount(result?.counts.findings, result?.findings.map((f) => `${f.name}: ${FINDING_TEXT[f.finding] ?? f.finding}`)),
        namedCount(result?.counts.orphaned, result?.orphaned),
        namedCount(result?.counts.uncounted, result?.uncounted),
        ...(machines
          ? [
              namedCount(result?.counts.poolsReset, result?.poolsReset.map((p) => `${p.pool}: reset to event ${p.resetTo} (stuck on a nondeterminism error)`)),
              namedCount(result?.counts.stuckRunnersEnded, result?.stuckRunnersEnded.map((name) => `${name}: workflow ended (its tasks kept failing)`)),
              // Passes recorded before pools were asked have none.
              namedCount(result && (result.counts.poolsAskedToLook ?? 0), result?.poolsAskedToLook?.map((p) => `${p.pool}: ${p.why}`)),
            ]
          : []),
      ],
      'liveness pass',
    );
    return scheduleGroup(`Liveness ${c.check === 'machines' ? 'machine' : 'GitHub'} check of provider ${c.provider}`, c, undefined, runs);
  });
}

/**
 * @typedef {{ examined: number, redelivered: number, givenUp: number, failing: number, hooks?: string[], unreadable?: string[], truncated: boolean,
 *   failures: { target: string, error: string }[] }} RedeliveryResult
 * @typedef {{ credentials: string, scheduleId: string, scheduled: boolean, paused?: boolean, note?: string, intervalMs?: number,
 *   nextRunAt?: string, runs: { workflowId: string, runId: string, scheduledAt: string, status: string, error?: string, result?: RedeliveryResult }[] }} Redelivery
 * @param {Redelivery[]} redeliveries
 */
export function redeliveriesView(redeliveries) {
  if (redeliveries.length === 0) return empty('No GitHub credentials are configured.');
  return redeliveries.map((r) => {
    const runs = passesTable(
      r,
      ['Read', 'Asked again', 'Given up', 'Still failing', 'Webhooks'],
      (result) => [
        h('td', {}, result ? `${result.examined}${result.truncated ? '+' : ''}` : '–'),
        h('td', {}, count(result?.redelivered)),
        h('td', {}, count(result?.givenUp)),
        h('td', {}, count(result?.failing)),
        // An App's own webhook, or the repository and organisation webhooks a token's pools use
        // (and, in the tooltip, an enterprise pool's organisations whose webhooks the token may not list).
        h(
          'td',
          { title: [...(result?.hooks ?? []), ...(result?.unreadable ?? []).map((o) => `not listed to these credentials: ${o}`)].join('\n') },
          result ? (result.hooks ? String(result.hooks.length) : 'App') : '–',
        ),
      ],
      'redelivery pass',
    );
    return scheduleGroup(`Webhook redelivery for credentials ${r.credentials}`, r, undefined, runs);
  });
}

/**
 * @typedef {'ok' | 'warning' | 'failing'} CheckStatus
 * @typedef {{ name: string, status: CheckStatus, summary: string, problems?: string[] }} StatusCheck
 * @typedef {{ status: CheckStatus, namespace: string, taskQueue: string, checkedAt: string, checks: StatusCheck[] }} InstallationStatus
 */

/** @param {string} name */
const checkName = (name) => name.replace('_', ' ');

/**
 * What is wrong first, each problem with what to do; what is fine after, in a line each.
 * @param {InstallationStatus} status
 */
export function statusView(status) {
  const troubled = status.checks.filter((c) => c.status !== 'ok');
  const fine = status.checks.filter((c) => c.status === 'ok');
  const headline =
    troubled.length === 0
      ? 'Every check is ok.'
      : `${troubled.length} ${troubled.length === 1 ? 'check needs' : 'checks need'} attention: ${troubled.map((c) => checkName(c.name)).join(', ')}.`;
  return [
    h('p', { class: 'status-headline' }, badge(status.status, 'check'), ' ', headline, h('span', { class: 'muted small' }, ' Checked ', clock(status.checkedAt), '.')),
    ...(troubled.length > 0
      ? [
          h(
            'ul',
            { class: 'checks', 'aria-label': 'Checks that need attention' },
            ...troubled.map((c) =>
              h(
                'li',
                {},
                h('strong', {}, checkName(c.name)),
                ' ',
                badge(c.status, 'check'),
                ' ',
                c.summary,
                ...(c.problems?.length ? [h('ul', {}, ...c.problems.map((p) => h('li', {}, p)))] : []),
              ),
            ),
          ),
        ]
      : []),
    h('dl', { class: 'generic checks-ok', 'aria-label': 'Checks that are ok' }, ...fine.flatMap((c) => [h('dt', {}, checkName(c.name)), h('dd', {}, c.summary)])),
  ];
}
