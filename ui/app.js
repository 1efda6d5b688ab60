// @ts-check
/**
 * The dashboard: sign in with the admin token (kept in sessionStorage, never in
 * a URL), then poll the API and redraw what changed.
 */
import { ApiError, api, enc, session } from './api.js';
import { confirmAction } from './confirm.js';
import { h, mount, tickAges } from './dom.js';
import { setTemporalTarget, workflowsUrl } from './temporal-links.js';
import { jobFoundView, leakedView, livenessView, poolDetailView, poolsView, redeliveriesView, statusView, sweepsView, unmatchedView } from './views.js';

/** How often the page asks again; the views are live within about this long. */
const POLL_MS = 1500;
/** Sweeps, liveness and redelivery passes run every minute or few: asking for them every few polls is plenty. */
const SWEEP_EVERY = 4;
/**
 * The status asks Temporal a dozen things and GitHub once per credentials (a look GitHub does not
 * count, but traffic all the same): about every 30 s is enough for what changes in minutes.
 */
const STATUS_EVERY = 20;
/** After "Sweep now", how long sweeps are asked for on every poll even before the run shows. */
const FOLLOW_SWEEP_MS = 5000;

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

const state = {
  /** @type {string | undefined} */
  selectedPool: new URLSearchParams(location.hash.slice(1)).get('pool') ?? undefined,
  /** @type {Map<string, any>} runner name → its state (undefined until loaded) */
  timelines: new Map(),
  /** @type {any[]} */
  pools: [],
  polls: 0,
  /** @type {number | undefined} when a sweep was asked for here: until it has run, sweeps are asked for on every poll */
  sweepAskedAt: undefined,
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  timer: undefined,
  /** @type {Map<string, string>} what each section last drew, so unchanged data is not redrawn */
  drawn: new Map(),
};

/**
 * Redraws a section only when its data changed, so focus and hover survive polls.
 * @param {string} id
 * @param {unknown} data
 * @param {() => (Node | string) | (Node | string)[]} render
 */
function draw(id, data, render) {
  const key = JSON.stringify(data);
  if (state.drawn.get(id) === key) return;
  state.drawn.set(id, key);
  const nodes = render();
  mount($(id), ...(Array.isArray(nodes) ? nodes : [nodes]));
}

/** @param {string} message */
function toast(message) {
  const el = $('toast');
  el.textContent = message;
  el.hidden = false;
  setTimeout(() => {
    if (el.textContent === message) el.hidden = true;
  }, 5000);
}

/** @param {string} [message] why the page asks again */
function showLogin(message) {
  clearTimeout(state.timer);
  polling.again = false;
  $('dashboard').hidden = true;
  $('logout').hidden = true;
  $('temporal-link').hidden = true;
  $('live').textContent = '';
  $('login').hidden = false;
  const error = $('login-error');
  error.textContent = message ?? '';
  error.hidden = !message;
  $('token').focus();
}

function selectPool(/** @type {string | undefined} */ name) {
  state.selectedPool = name;
  state.timelines.clear();
  history.replaceState(null, '', name ? `#pool=${enc(name)}` : '#');
  state.drawn.delete('pools');
  void poll();
}

const poolActions = {
  select: selectPool,
  /** @param {any} pool */
  toggleEnabled(pool) {
    const enable = pool.enabled === false;
    confirmAction(
      {
        title: `${enable ? 'Enable' : 'Disable'} pool ${pool.name}?`,
        message: enable
          ? 'The pool takes jobs again and keeps its minimum of idle runners.'
          : 'The pool takes no new jobs and creates no runners; runners it has now finish their jobs.',
        confirmLabel: enable ? 'Enable' : 'Disable',
        run: async () => {
          await updatePool(pool.name, { enabled: enable });
          return `Pool ${pool.name} ${enable ? 'enabled' : 'disabled'}`;
        },
      },
      afterAction,
    );
  },
  /** @param {any} pool */
  editSize(pool) {
    confirmAction(
      {
        title: `Size of pool ${pool.name}`,
        message: 'Idle runners beyond the minimum leave after the idle timeout; busy runners are never removed.',
        confirmLabel: 'Save',
        fields: [
          { name: 'minIdleRunners', label: 'Min idle runners', type: 'number', value: pool.minIdleRunners },
          { name: 'maxRunners', label: 'Max runners', type: 'number', value: pool.maxRunners },
        ],
        run: async (values) => {
          await updatePool(pool.name, { minIdleRunners: values.minIdleRunners, maxRunners: values.maxRunners });
          return `Pool ${pool.name}: min idle ${values.minIdleRunners}, max ${values.maxRunners}`;
        },
      },
      afterAction,
    );
  },
};

/** PUT takes the whole settings: the current ones with the change applied. */
async function updatePool(/** @type {string} */ name, /** @type {Record<string, unknown>} */ change) {
  const current = await api('GET', `/api/v1/pools/${enc(name)}`);
  await api('PUT', `/api/v1/pools/${enc(name)}`, { ...current.settings, ...change });
}

const runnerActions = {
  toggleTimeline(/** @type {string} */ name) {
    if (state.timelines.has(name)) state.timelines.delete(name);
    else state.timelines.set(name, undefined);
    state.drawn.delete('pool-detail-body');
    void poll();
  },
  remove(/** @type {string} */ name) {
    confirmAction(
      {
        title: `Delete runner ${name}?`,
        message: 'Graceful delete: the runner is removed from GitHub unless it is running a job (then it finishes first), and its machine is deleted.',
        confirmLabel: 'Delete',
        run: async () => {
          await api('DELETE', `/api/v1/runners/${enc(name)}`);
          return `Runner ${name} is being deleted`;
        },
      },
      afterAction,
    );
  },
  forceRemove(/** @type {string} */ name) {
    confirmAction(
      {
        title: `Force delete runner ${name}?`,
        message: 'The machine is deleted now, whatever the provider answers. GitHub is asked first: a runner that is running a job is refused unless you bypass the busy check.',
        confirmLabel: 'Force delete',
        danger: true,
        fields: [{ name: 'bypassBusy', label: 'Bypass the busy check: delete it even though it is running a job', type: 'checkbox', value: false, hidden: true }],
        revealOnError: (error) => (error.code === 'runner_busy' ? 'bypassBusy' : undefined),
        run: async (values) => {
          const result = await api('DELETE', `/api/v1/runners/${enc(name)}?force=true${values.bypassBusy ? '&bypassBusy=true' : ''}`);
          return result?.warning ? `Runner ${name} is being force-deleted (${result.warning})` : `Runner ${name} is being force-deleted`;
        },
      },
      afterAction,
    );
  },
};

const sweepActions = {
  sweepNow(/** @type {string} */ provider) {
    confirmAction(
      {
        title: `Sweep provider ${provider} now?`,
        message:
          'The sweep deletes machines of this provider that no runner owns once they are past the grace period, and looks for lost jobs. It runs through its schedule, so it goes on where the last sweep left off; a sweep already running finishes first.',
        confirmLabel: 'Sweep now',
        run: async () => {
          const result = await api('POST', `/api/v1/sweeps/${enc(provider)}`);
          state.sweepAskedAt = Date.now();
          return `${result.scheduleId} triggered${result.paused ? ' (its schedule is paused: only this run happens)' : ''}`;
        },
      },
      afterAction,
    );
  },
};

function afterAction(/** @type {string} */ message) {
  toast(message);
  void poll();
}

async function loadPoolDetail() {
  const name = state.selectedPool;
  if (!name) {
    $('pool-detail').hidden = true;
    return;
  }
  let detail;
  try {
    detail = await api('GET', `/api/v1/pools/${enc(name)}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      selectPool(undefined);
      return;
    }
    throw err;
  }
  const [{ runners }] = await Promise.all([
    api('GET', `/api/v1/runners?pool=${enc(name)}`),
    ...[...state.timelines.keys()].map(async (runner) => {
      try {
        state.timelines.set(runner, await api('GET', `/api/v1/runners/${enc(runner)}`));
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
        state.timelines.delete(runner);
      }
    }),
  ]);
  /** @type {Map<string, { startTime: string, runId: string }>} */
  const started = new Map(runners.map((/** @type {any} */ r) => [r.name, { startTime: r.startTime, runId: r.runId }]));
  $('pool-detail').hidden = false;
  $('pool-detail-title').textContent = `Runners of pool ${name}`;
  draw('pool-detail-body', { detail, runners, timelines: [...state.timelines] }, () => poolDetailView(detail, started, state.timelines, runnerActions));
}

/** @param {unknown} err */
function showPoolDetailError(err) {
  if (err instanceof ApiError && err.unauthorized) throw err;
  $('pool-detail').hidden = false;
  draw('pool-detail-body', { error: String(err) }, () =>
    h('p', { class: 'error', role: 'alert' }, `Could not load this pool: ${err instanceof Error ? err.message : String(err)}. Retrying…`),
  );
}

/** @returns {Promise<boolean>} whether to keep polling (false once signed out) */
async function refresh() {
  if (!session.token()) {
    showLogin();
    return false;
  }
  try {
    const hadSelection = state.selectedPool !== undefined;
    // Everything is asked for at once: one slow part must not delay the others.
    const [summary, leaked, unmatched, sweeps, liveness, redeliveries, status] = await Promise.all([
      api('GET', '/api/v1/summary'),
      api('GET', '/api/v1/runners?leaked=true&limit=50'),
      api('GET', '/api/v1/jobs/unmatched'),
      state.sweepAskedAt !== undefined || state.polls % SWEEP_EVERY === 0 ? api('GET', '/api/v1/sweeps') : undefined,
      state.polls % SWEEP_EVERY === 0 ? api('GET', '/api/v1/liveness') : undefined,
      state.polls % SWEEP_EVERY === 0 ? api('GET', '/api/v1/redeliveries') : undefined,
      state.polls % STATUS_EVERY === 0 ? api('GET', '/api/v1/status') : undefined,
      // One pool that does not answer must not freeze the rest of the page: its error shows in its own section.
      loadPoolDetail().catch(showPoolDetailError),
    ]);
    setTemporalTarget(summary.temporal);
    const link = /** @type {HTMLAnchorElement} */ ($('temporal-link'));
    link.href = workflowsUrl();
    link.hidden = false;
    state.pools = summary.pools;
    if (!state.selectedPool && summary.pools.length > 0) state.selectedPool = summary.pools[0].name;
    draw('pools', { pools: summary.pools, selected: state.selectedPool }, () => poolsView(summary.pools, state.selectedPool, poolActions));
    draw('leaked', leaked.runners, () => leakedView(leaked.runners));
    draw('unmatched', unmatched.jobs, () => unmatchedView(unmatched.jobs));
    if (sweeps) {
      draw('sweeps', sweeps.sweeps, () => sweepsView(sweeps.sweeps, sweepActions));
      // Followed while any run is running, and for a few seconds in any case: the schedule takes a moment to start the run.
      const running = sweeps.sweeps.some((/** @type {any} */ s) => s.runs.some((/** @type {any} */ r) => r.status === 'running'));
      if (!running && state.sweepAskedAt !== undefined && Date.now() - state.sweepAskedAt > FOLLOW_SWEEP_MS) state.sweepAskedAt = undefined;
    }
    if (liveness) draw('liveness', liveness.liveness, () => livenessView(liveness.liveness));
    if (redeliveries) draw('redeliveries', redeliveries.redeliveries, () => redeliveriesView(redeliveries.redeliveries));
    if (status) draw('status', status, () => statusView(status));
    if (!hadSelection && state.selectedPool) await loadPoolDetail();
    state.polls += 1;
    $('connection-error').hidden = true;
    $('live').replaceChildren(h('span', { class: 'dot', 'aria-hidden': 'true' }), `Live · updated ${new Date().toLocaleTimeString()}`);
  } catch (err) {
    if (err instanceof ApiError && err.unauthorized) {
      session.signOut();
      showLogin(err.message);
      return false;
    }
    const banner = $('connection-error');
    banner.textContent = `Could not refresh: ${err instanceof Error ? err.message : String(err)}. Retrying…`;
    banner.hidden = false;
  }
  return true;
}

const polling = { running: false, again: false };

/** Refreshes now; a call while a refresh is under way makes it go again right after, so there is only ever one loop. */
async function poll() {
  if (polling.running) {
    polling.again = true;
    return;
  }
  polling.running = true;
  clearTimeout(state.timer);
  let keepGoing;
  const startedAt = Date.now();
  try {
    keepGoing = await refresh();
  } finally {
    polling.running = false;
  }
  if (!keepGoing) return;
  // A refresh asks every pool; with hundreds of them it takes seconds of the workers' and the
  // server's time, so the page waits in proportion and an installation's size never turns an open
  // tab into a steady load.
  const pause = Math.max(POLL_MS, 2 * (Date.now() - startedAt));
  state.timer = setTimeout(() => void poll(), polling.again ? 0 : pause);
  polling.again = false;
}

function start() {
  $('login').hidden = true;
  $('dashboard').hidden = false;
  $('logout').hidden = false;
  state.drawn.clear();
  void poll();
}

$('login-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($('token'));
  const token = input.value.trim();
  // Checked before it is kept, so a wrong token is reported here and never stored.
  api('GET', '/api/v1/summary', undefined, token).then(
    () => {
      session.signIn(token);
      input.value = '';
      start();
    },
    (/** @type {unknown} */ err) => showLogin(err instanceof Error ? err.message : String(err)),
  );
});

/** The newest lookup asked for: an older one that answers later must not replace its answer. */
let jobLookups = 0;

$('find-job-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const id = /** @type {HTMLInputElement} */ ($('job-id')).value.trim();
  const found = $('job-found');
  const lookup = ++jobLookups;
  mount(found, h('p', { class: 'muted' }, `Looking for job ${id}…`));
  api('GET', `/api/v1/jobs/${enc(id)}`).then(
    (job) => {
      if (lookup === jobLookups) mount(found, ...jobFoundView(job, selectPool));
    },
    (/** @type {unknown} */ err) => {
      if (err instanceof ApiError && err.unauthorized) return showLogin(err.message);
      if (lookup !== jobLookups) return;
      // The API's own words: what was wrong with the id, or what may have become of the job.
      mount(found, h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err)));
    },
  );
});

$('logout').addEventListener('click', () => {
  session.signOut();
  showLogin();
});

setInterval(tickAges, 1000);

if (session.token()) start();
else showLogin();
