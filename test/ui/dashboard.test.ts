/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core)
 * against the whole stack: the GitHub simulator, the API serving /ui, a worker
 * and simulated machines.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { forceDeleteSignal, runnerWorkflowId, type InstanceState } from '../../workflows/messages';
import { jobsQueuedSignal, poolStateQuery, poolWorkflowId } from '../../workflows/pool-messages';
import { redeliveryScheduleId } from '../../worker/redelivery-schedule';
import { scaleSetListenerId, scaleSetStateQuery } from '../../workflows/scale-set-messages';
import { ensureLivenessSchedules, livenessScheduleId } from '../../worker/liveness-schedule';
import { ensureSweepSchedules, sweepScheduleId } from '../../worker/sweep-schedule';
import { api, e2ePool, useE2EStack, type E2EStack } from '../e2e/stack';
import { eventually, uniqueName } from '../support/temporal';
import { openDashboard, poolRow, runnerRow, showPool, useBrowser } from './browser';

// A provider name and credentials of this file's own: sweep schedules are per provider name, redelivery schedules per credentials.
const PROVIDER = uniqueName('simulated');
const CREDENTIALS = uniqueName('token').toLowerCase();
const stack = useE2EStack(
  { jobDurationMs: 300 },
  { simulatedProvider: PROVIDER, githubTokenCredentials: CREDENTIALS, config: { redelivery: { interval: '2s', hookRefresh: '2s', firstDelay: '500ms', maxDelay: '2s' } } },
);
const browser = useBrowser();

afterAll(async () => {
  // The schedule lives in the server, not in the stack.
  await stack.client?.schedule.getHandle(redeliveryScheduleId(CREDENTIALS)).delete().catch(() => undefined);
});

async function createPool(repo: string, overrides: Parameters<typeof e2ePool>[1] = {}): Promise<string> {
  const pool = e2ePool(repo, { provider: PROVIDER, github: { credentials: CREDENTIALS, scope: { kind: 'repo', owner: 'acme', repo } }, ...overrides });
  const res = await api(stack, 'POST', '/api/v1/pools', pool);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return pool.name;
}

/** Queues a long job for the pool's repository and waits until a runner has it. */
async function busyRunner(s: E2EStack, repo: string): Promise<string> {
  const job = s.sim.queueJob({ repository: `acme/${repo}`, labels: ['self-hosted', 'linux', repo], durationMs: 600_000 });
  const running = await eventually(() => {
    const j = s.sim.jobs().find((x) => x.id === job.id);
    return j?.status === 'in_progress' ? j : undefined;
  }, 45_000, 'job in progress');
  return running.runnerName!;
}

describe('dashboard', () => {
  it('signs in with the admin token, keeps it in the session and out of the URL, and signs out', async () => {
    const page = await openDashboard(browser, stack, { signIn: false });
    await page.getByLabel('Admin token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('not the admin token');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);

    await page.getByLabel('Admin token').fill(stack.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('region', { name: 'Pools' }).waitFor();
    expect(page.url()).not.toContain(stack.adminToken);
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([stack.adminToken]);
    expect(await page.evaluate('localStorage.length')).toBe(0);

    await page.reload();
    await page.getByRole('region', { name: 'Pools' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  it("shows a job's runner appear, take the job, and go, without reloading", async () => {
    const repo = 'watch';
    const pool = await createPool(repo);
    const page = await openDashboard(browser, stack);
    await showPool(page, pool);
    const runners = page.getByRole('region', { name: `Runners of pool ${pool}` });
    await runners.getByText('No runners right now').waitFor();

    const job = stack.sim.queueJob({ repository: `acme/${repo}`, labels: ['self-hosted', 'linux', repo], durationMs: 10_000 });
    const taken = await eventually(() => stack.sim.jobs().find((x) => x.id === job.id && x.runnerName), 45_000, 'job taken');
    const row = runnerRow(page, taken.runnerName!);
    await row.waitFor();
    // Busy while the job runs: the pool's counts say so too.
    await row.getByText('busy', { exact: true }).waitFor();
    await expect.poll(() => poolRow(page, pool).getByRole('cell').nth(5).textContent(), { timeout: 15_000 }).toBe('1');
    // Read from the glance the pool wrote, and the cell says when.
    expect(await poolRow(page, pool).getByRole('cell').nth(5).getAttribute('title')).toMatch(/^as the pool last wrote them, at /);

    await row.getByRole('button', { name: `Timeline of ${taken.runnerName}` }).click();
    const transitions = runners.getByRole('list', { name: 'Status transitions' });
    await transitions.getByText('running', { exact: true }).waitFor();

    // The ephemeral runner leaves after its job: its row goes away on its own.
    await row.waitFor({ state: 'detached', timeout: 45_000 });
    await runners.getByText('No runners right now').waitFor();
    expect(stack.sim.jobs().find((x) => x.id === job.id)?.status).toBe('completed');
  });

  it('force-deletes a runner: a busy one is refused with the API error, then deleted with the bypass confirmed', async () => {
    const repo = 'force';
    const pool = await createPool(repo);
    const runner = await busyRunner(stack, repo);
    const page = await openDashboard(browser, stack);
    await showPool(page, pool);

    await page.getByRole('button', { name: `Force delete ${runner}` }).click();
    const dialog = page.getByRole('dialog', { name: `Force delete runner ${runner}?` });
    const bypass = dialog.getByLabel(/Bypass the busy check/);
    expect(await bypass.isVisible()).toBe(false);
    await dialog.getByRole('button', { name: 'Force delete' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toMatch(/is running a job on GitHub: cancel the job/);
    // Refused: the runner is untouched.
    const state = await stack.client.workflow.getHandle(runnerWorkflowId(runner)).query<InstanceState>('state');
    expect(state.status).toBe('running');

    await bypass.check();
    await dialog.getByRole('button', { name: 'Force delete' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'force-deleted' }).count()).toBe(1);
    await runnerRow(page, runner).waitFor({ state: 'detached', timeout: 30_000 });
    const final = (await stack.client.workflow.getHandle(runnerWorkflowId(runner)).result()) as InstanceState;
    expect(final).toMatchObject({ status: 'deleted', forced: true });
    expect(final.transitions.find((t) => t.to === 'pending_force_delete')?.reason).toMatch(/bypassBusy/);
  });

  it("renders the API's error for an invalid max, then edits the size and disables the pool", async () => {
    const pool = await createPool('edit', { maxRunners: 3 });
    const page = await openDashboard(browser, stack);

    await page.getByRole('button', { name: `Edit size of pool ${pool}` }).click();
    const dialog = page.getByRole('dialog', { name: `Size of pool ${pool}` });
    await dialog.getByLabel('Max runners').fill('-1');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toMatch(/^invalid pool: maxRunners: /);

    await dialog.getByLabel('Max runners').fill('5');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await poolRow(page, pool).getByText('0 / 5').waitFor();

    await page.getByRole('button', { name: `Disable pool ${pool}` }).click();
    const confirm = page.getByRole('dialog', { name: `Disable pool ${pool}?` });
    await confirm.getByRole('button', { name: 'Disable' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await poolRow(page, pool).getByText('disabled', { exact: true }).waitFor();
    const view = await stack.client.workflow.getHandle(poolWorkflowId(pool)).query(poolStateQuery);
    expect(view.settings).toMatchObject({ maxRunners: 5, enabled: false });
  });

  it('counts every queued job of a pool and says when it lists only the oldest', async () => {
    const pool = await createPool('long-queue', { maxRunners: 0 });
    const jobs = Array.from({ length: 250 }, (_, i) => ({ jobId: 800_000 + i, labels: ['self-hosted', 'linux', 'long-queue'], repository: 'acme/long-queue' }));
    await stack.client.workflow.getHandle(poolWorkflowId(pool)).signal(jobsQueuedSignal, { jobs });
    const page = await openDashboard(browser, stack);
    await showPool(page, pool);
    await page.getByText('The oldest 200 of 250 queued jobs.').waitFor();
    const listed = page.getByRole('table', { name: `Jobs queued for pool ${pool}` }).getByRole('row');
    // A header row and the 200 oldest jobs.
    await expect.poll(() => listed.count()).toBe(201);
    await listed.filter({ hasText: '800000' }).first().waitFor();
  });

  it("heads a scale-set pool's scale set with its name and listener, and shows a rename GitHub refuses with why", async () => {
    const name = uniqueName('ss-ui').toLowerCase().slice(0, 40);
    const settings = e2ePool(name, { name, provider: PROVIDER, mode: 'scaleSet', scaleSet: { minRunners: 0 }, maxRunners: 1, github: { credentials: CREDENTIALS, scope: { kind: 'org', org: 'acme' } } });
    expect((await api(stack, 'POST', '/api/v1/pools', settings)).status).toBe(201);
    const listener = stack.client.workflow.getHandle(scaleSetListenerId(name));
    const listening = await eventually(async () => {
      const s = await listener.query(scaleSetStateQuery).catch(() => undefined);
      return s?.status === 'listening' ? s : undefined;
    }, 30_000, 'the listener listening');
    const page = await openDashboard(browser, stack);
    await showPool(page, name);
    const block = page.getByRole('group', { name: 'Scale set' });
    const headline = block.locator('p').first();
    await expect.poll(() => headline.textContent()).toBe(`${name} · id ${listening.scaleSetId} · runner group Default · listener listening`);

    // Another scale set has the new name: the rename is refused, and the block says so until it is done.
    const renamed = `${name}-new`;
    const namesake = stack.sim.addScaleSet({ kind: 'org', org: 'acme' }, renamed, [renamed]);
    expect((await api(stack, 'PUT', `/api/v1/pools/${name}`, { ...settings, scaleSet: { minRunners: 0, name: renamed } })).status).toBe(202);
    await block.getByText(`Not yet as the pool says: renaming it from ${name} to ${renamed}.`).waitFor();
    await block.getByText(`Last error: scale set ${listening.scaleSetId} not renamed "${renamed}"; it is still "${name}"`).waitFor();
    await expect.poll(() => headline.textContent()).toBe(`${name} · id ${listening.scaleSetId} · runner group Default · listener listening`);
    // When the rename was last tried is a time, not the epoch milliseconds the view holds.
    const tried = block.locator('dt', { hasText: /^renameTriedAt$/ }).locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => tried.locator('time').count()).toBe(1);
    expect(await tried.locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
    stack.sim.deleteScaleSet(namesake);
    // Given its old name back, the pool has nothing left to rename.
    expect((await api(stack, 'PUT', `/api/v1/pools/${name}`, { ...settings, scaleSet: { minRunners: 0, name } })).status).toBe(202);
    await block.getByText('Not yet as the pool says').waitFor({ state: 'detached' });
    await expect.poll(() => block.getByText('Last error').count()).toBe(0);
    expect((await api(stack, 'DELETE', `/api/v1/pools/${name}`)).status).toBeLessThan(300);
    await listener.result();
  });

  it('lists jobs no pool can take and machines a forced delete leaked', async () => {
    const job = stack.sim.queueJob({ repository: 'acme/nowhere', labels: ['self-hosted', 'windows', 'nowhere-gpu'] });
    const repo = 'leak';
    await createPool(repo);
    const runner = await busyRunner(stack, repo);
    stack.machines.setFault('delete', { failForever: true, instance: runner, message: 'cloud API unavailable' });
    await stack.client.workflow.getHandle(runnerWorkflowId(runner)).signal(forceDeleteSignal, { reason: 'stuck' });

    const page = await openDashboard(browser, stack);
    const unmatched = page.getByRole('region', { name: 'Unmatched jobs' });
    await unmatched.getByRole('row', { name: new RegExp(`^${job.id} acme/nowhere`) }).waitFor();
    const leaked = page.getByRole('region', { name: 'Leaked machines' });
    const row = leaked.getByRole('row', { name: new RegExp(runner) });
    await row.waitFor();
    const link = await row.getByRole('link', { name: `Open runner ${runner} in the Temporal Web UI` }).getAttribute('href');
    expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:8233/namespaces/default/workflows/runner%2F${runner}/[0-9a-f-]+/history$`));
    // What happens to the machine now, and where to watch it happen.
    await row.getByRole('cell', { name: 'clean-up retrying the delete' }).waitFor();
    const cleanup = await row.getByRole('link', { name: `Open clean-up of ${runner} in the Temporal Web UI` }).getAttribute('href');
    expect(decodeURIComponent(cleanup ?? '')).toContain(`WorkflowId="cleanup/${runner}"`);

    // Once the provider deletes it, the machine leaves the list.
    stack.machines.clearFaults('delete');
    await leaked.getByRole('row', { name: new RegExp(runner) }).waitFor({ state: 'detached', timeout: 30_000 });
  });

  it('finds a job: waiting behind a pool at its maximum, then on its runner; and says why for an id it cannot find', async () => {
    const repo = 'find-job';
    const pool = await createPool(repo, { maxRunners: 1 });
    const runner = await busyRunner(stack, repo);
    const running = stack.sim.jobs().find((j) => j.runnerName === runner)!;
    const waiting = stack.sim.queueJob({ repository: `acme/${repo}`, labels: ['self-hosted', 'linux', repo] });
    // The page asks only when told to: the test waits for the pool to count the job first.
    await eventually(async () => ((await api(stack, 'GET', `/api/v1/jobs/${waiting.id}`)).status === 200 ? true : undefined), 30_000, 'the pool to count the job');

    const page = await openDashboard(browser, stack);
    const finder = page.getByRole('region', { name: 'Where is a job?' });
    const find = async (id: string) => {
      await finder.getByLabel('GitHub job id').fill(id);
      await finder.getByRole('button', { name: 'Find' }).click();
    };
    await find(String(waiting.id));
    await finder.getByText(`Job ${waiting.id} waits in pool ${pool}, behind 0 jobs queued earlier.`).waitFor();
    await finder.getByRole('listitem').filter({ hasText: `pool ${pool} is at its maximum: 1 of 1 machines (1 busy, 0 leaving)` }).waitFor();

    await find(String(running.id));
    await finder.getByText(`Job ${running.id} runs on ${runner} of pool ${pool}.`).waitFor();
    // The pool's name shows its runners.
    await finder.getByRole('button', { name: `Show runners of pool ${pool}` }).click();
    await runnerRow(page, runner).waitFor();

    await find('12ab');
    await expect.poll(() => finder.getByRole('alert').textContent()).toContain(`job id must be GitHub's numeric job id`);
    await find('77777777777');
    await expect.poll(() => finder.getByRole('alert').textContent()).toContain('no pool counts job 77777777777');

    // A slow answer to an earlier lookup does not replace the answer to a later one.
    let released = false;
    await page.route('**/api/v1/jobs/77777777777', async (route) => {
      await new Promise((r) => setTimeout(r, 1_500));
      released = true;
      await route.continue();
    });
    await find('77777777777');
    await find(String(running.id));
    await finder.getByText(`Job ${running.id} runs on ${runner} of pool ${pool}.`).waitFor();
    await expect.poll(() => released, { timeout: 10_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(await finder.getByRole('alert').count()).toBe(0);
    await finder.getByText(`Job ${running.id} runs on ${runner} of pool ${pool}.`).waitFor();
  });

  it("shows the installation's status: what needs attention with what to do, and what is ok", async () => {
    stack.sim.queueJob({ repository: 'acme/nowhere', labels: ['self-hosted', 'status-nowhere'] });
    type Status = { checks: { name: string; status: string; problems?: string[] }[] };
    const statusNow = async () => (await (await fetch(`${stack.api.url}/api/v1/status`, { headers: { authorization: `Bearer ${stack.adminToken}` } })).json()) as Status;
    // Recorded before the page opens: the page asks for the status when it opens, and then only every 30 s.
    const api = await eventually(async () => {
      const s = await statusNow();
      return s.checks.some((c) => c.name === 'unmatched_jobs' && c.problems?.some((p) => p.includes('status-nowhere'))) ? s : undefined;
    }, 30_000, 'the unmatched job in the status');
    const page = await openDashboard(browser, stack);
    const status = page.getByRole('region', { name: 'Status' });
    const attention = status.getByRole('list', { name: 'Checks that need attention' });
    const unmatched = attention.getByRole('listitem').filter({ hasText: /^unmatched jobs warning \d+ jobs? matched no pool/ });
    await unmatched.waitFor();
    await unmatched.getByText(/jobs waiting for labels no pool has \(.*\[self-hosted,status-nowhere\].*\): create or widen a pool/).waitFor();
    await expect.poll(() => status.getByRole('paragraph').first().textContent()).toMatch(/^(warning|failing) \d checks? needs? attention: .*unmatched jobs.*\. Checked \d/);
    // What is fine is said too, each in a line: the workers of the stack and Temporal.
    const ok = status.getByRole('definition');
    await expect.poll(() => ok.allTextContents()).toContainEqual('namespace "default" reachable');
    expect(api.checks.find((c) => c.name === 'workers')?.status).toBe('ok');
    await expect.poll(() => ok.allTextContents()).toContainEqual(expect.stringMatching(/^\d+ workers? on task queue ".+" \(.+\), one build$/));
    await page.close();
  });

  it('sweeps a provider now from its sweep, which shows the run when it is done', async () => {
    const page = await openDashboard(browser, stack);
    const sweep = page.getByRole('group', { name: `Sweep of provider ${PROVIDER}` });
    await sweep.getByText('no schedule (a worker creates it at start)').waitFor();
    expect(await sweep.getByRole('button', { name: `Sweep provider ${PROVIDER} now` }).count()).toBe(0);

    // An enterprise pool that has had a job from a repository its credentials cannot read at the sweep.
    const enterprise = uniqueName('ent').toLowerCase();
    const entPool = e2ePool(enterprise, { provider: PROVIDER, maxRunners: 1, github: { credentials: CREDENTIALS, scope: { kind: 'enterprise', enterprise } } });
    expect((await api(stack, 'POST', '/api/v1/pools', entPool)).status).toBe(201);
    const hidden = `${enterprise}-org/private`;
    const job = stack.sim.queueJob({ repository: hidden, labels: entPool.labels });
    await eventually(() => stack.sim.jobs().find((j) => j.id === job.id && j.status === 'completed'), 30_000, 'the enterprise pool to run a job');
    stack.sim.setFault({ kind: 'unreadable-repository', repository: hidden });

    const { config } = stack.loaded;
    await ensureSweepSchedules(stack.client, { ...config, sweep: { ...config.sweep, enabled: true, interval: 3_600_000 } }, config.temporal.taskQueue);
    const scheduleId = sweepScheduleId(PROVIDER);
    // Paused, so that the only run is the button's: an hourly schedule fires on the hour, and a test run may straddle one.
    await stack.client.schedule.getHandle(scheduleId).pause('only the button runs it');
    try {
      // Sweeps are asked for every few polls: the button shows once the schedule does.
      await sweep.getByRole('button', { name: `Sweep provider ${PROVIDER} now` }).click({ timeout: 30_000 });
      const dialog = page.getByRole('dialog', { name: `Sweep provider ${PROVIDER} now?` });
      await dialog.getByRole('button', { name: 'Sweep now' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await expect.poll(() => page.getByRole('status').filter({ hasText: `${scheduleId} triggered` }).count()).toBe(1);
      const runs = sweep.getByRole('table', { name: `Last runs of ${scheduleId}` });
      const done = runs.getByRole('row').filter({ hasText: 'completed' });
      await done.waitFor({ timeout: 30_000 });
      // What its GitHub side did, beside what it did to machines.
      expect(await runs.getByRole('columnheader').allTextContents()).toContain('At GitHub');
      expect(await done.textContent()).toMatch(/\d+ removed · \d+ routed again · \d+ taken out · 1 refused/);
      expect(await done.getByText('1 refused').getAttribute('title')).toContain(`refused by GitHub (gone, or not the credentials' to read), left alone a while: repo:${hidden}`);
      const actions = (await stack.client.schedule.getHandle(scheduleId).describe()).info.recentActions;
      expect(actions).toHaveLength(1);
    } finally {
      stack.sim.clearFaults();
      await stack.client.schedule.getHandle(scheduleId).delete();
      await api(stack, 'DELETE', `/api/v1/pools/${entPool.name}`);
    }
  });

  it("shows each provider's liveness checks, and the machine a pass found gone", async () => {
    const pool = await createPool('liveness-card', { minIdleRunners: 1, maxRunners: 1 });
    const victim = await eventually(async () => {
      const view = await stack.client.workflow.getHandle(poolWorkflowId(pool)).query(poolStateQuery);
      return view.runners.find((r) => r.runnerStatus === 'idle')?.name;
    }, 30_000, 'an idle runner');
    const page = await openDashboard(browser, stack);
    const machines = page.getByRole('group', { name: `Liveness machine check of provider ${PROVIDER}` });
    await machines.getByText('no schedule (a worker creates it at start)').waitFor();
    await page.getByRole('group', { name: `Liveness GitHub check of provider ${PROVIDER}` }).waitFor();

    const { config } = stack.loaded;
    await ensureLivenessSchedules(stack.client, { ...config, liveness: { ...config.liveness, enabled: true, interval: 3_600_000, githubInterval: 3_600_000 } }, config.temporal.taskQueue);
    const scheduleId = livenessScheduleId(PROVIDER, 'machines');
    try {
      stack.simulatedMachines!.killMachine(victim, { leaves: 'gone' });
      await stack.client.schedule.getHandle(scheduleId).trigger();
      const passes = machines.getByRole('table', { name: `Last passes of ${scheduleId}` });
      // Columns: scheduled, status, runners, found, pool gone, not counted, pools reset, stuck runners ended, pools asked to look.
      const found = passes.getByRole('row').filter({ has: page.getByRole('cell').nth(3).filter({ hasText: /^1$/ }) });
      await found.first().waitFor({ timeout: 30_000 });
      const cells = await found.first().getByRole('cell').allTextContents();
      expect(cells.slice(1, 9)).toEqual(['completed', expect.stringMatching(/^[1-9]\d*$/), '1', '0', '0', '0', '0', '0']);
      expect(await found.first().getByRole('cell').nth(3).getAttribute('title')).toBe(`${victim}: machine gone`);
    } finally {
      await Promise.all((['machines', 'github'] as const).map((check) => stack.client.schedule.getHandle(livenessScheduleId(PROVIDER, check)).delete()));
    }
  });

  it("shows each credentials' webhook redelivery, and a failed delivery asked for again", async () => {
    const repo = 'redelivered';
    await createPool(repo, { maxRunners: 0 });
    const page = await openDashboard(browser, stack);
    const group = page.getByRole('group', { name: `Webhook redelivery for credentials ${CREDENTIALS}` });
    await group.getByText('every 2s', { exact: false }).waitFor();

    // runnerflow is out of reach for one delivery: GitHub records it as failed until it is asked for again.
    stack.sim.setFault({ kind: 'unreachable-webhooks', action: 'queued', times: 1 });
    stack.sim.queueJob({ repository: `acme/${repo}`, labels: ['self-hosted', 'linux', repo] });
    const passes = group.getByRole('table', { name: `Last passes of ${redeliveryScheduleId(CREDENTIALS)}` });
    // Columns: scheduled, status, read, asked again, given up, still failing, webhooks.
    const asked = passes.getByRole('row').filter({ has: page.getByRole('cell').nth(3).filter({ hasText: /^1$/ }) });
    await asked.first().waitFor({ timeout: 30_000 });
    const cells = await asked.first().getByRole('cell').allTextContents();
    expect(cells.slice(1, 7)).toEqual(['completed', expect.stringMatching(/^\d+$/), '1', '0', expect.stringMatching(/^\d+$/), expect.stringMatching(/^[1-9]\d*$/)]);
    // The webhooks followed are those of the scopes of this file's pools, this one's among them.
    expect((await asked.first().getByRole('cell').nth(6).getAttribute('title'))?.split('\n')).toContainEqual(expect.stringMatching(new RegExp(`^repo:acme/${repo} hook \\d+$`)));
  });
});
