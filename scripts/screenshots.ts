/**
 * Regenerates docs/dashboard-*.png: a throwaway Temporal dev server (its own
 * port and database), the dev stack with simulated machines, a staged scene,
 * and Debian's Chromium taking the pictures. `npm run screenshots`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { launchChromium } from '../devstack/browser';
import { stageDashboardScene } from '../devstack/dashboard-scene';
import { devServer, freePort } from '../devstack/temporal-server';

const DOCS = resolve(import.meta.dirname, '../docs');
const log = (line: string) => console.log(`screenshots: ${line}`);

async function shoot(page: Page, name: string, fullPage = true): Promise<void> {
  const path = join(DOCS, `dashboard-${name}.png`);
  await page.screenshot({ path, fullPage });
  log(`wrote ${path}`);
}

async function main(): Promise<void> {
  const db = mkdtempSync(join(tmpdir(), 'runnerflow-screenshots-'));
  const port = String(await freePort());
  Object.assign(process.env, {
    TEMPORAL_DB: join(db, 'temporal.db'),
    TEMPORAL_UI_PORT: 'off',
    TEMPORAL_HTTP_PORT: String(await freePort()),
    TEMPORAL_METRICS_PORT: String(await freePort()),
  });
  devServer('start', port, 'quiet');
  const browser = await launchChromium();
  try {
    const scene = await stageDashboardScene(`127.0.0.1:${port}`, log);
    try {
      const page = await browser.context.newPage();
      await page.goto(`${scene.stack.api.url}/ui`);
      await page.getByLabel('Admin token').fill(scene.stack.adminToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Show runners of pool linux-x64' }).click();
      await page.getByRole('button', { name: `Timeline of ${scene.busyRunner}` }).click();
      await page.getByRole('list', { name: 'Status transitions' }).waitFor();
      await page.getByRole('group', { name: 'Sweep of provider simulated' }).getByRole('row').nth(1).waitFor();
      await shoot(page, 'overview');

      // A job no pool took (its pool is disabled), looked up by its id.
      const finder = page.getByRole('region', { name: 'Where is a job?' });
      const train = scene.stack.sim.jobs().find((j) => j.repository === 'acme/models');
      if (train) {
        await finder.getByLabel('GitHub job id').fill(String(train.id));
        await finder.getByRole('button', { name: 'Find' }).click();
        await finder.getByText(`No pool took job ${train.id}`).waitFor();
        await finder.screenshot({ path: join(DOCS, 'dashboard-find-job.png') });
        log(`wrote ${join(DOCS, 'dashboard-find-job.png')}`);
      }

      const status = page.getByRole('region', { name: 'Status' });
      await status.getByRole('definition').first().waitFor();
      await status.screenshot({ path: join(DOCS, 'dashboard-status.png') });
      log(`wrote ${join(DOCS, 'dashboard-status.png')}`);

      await page.getByRole('button', { name: `Force delete ${scene.busyRunner}` }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Force delete' }).click();
      await page.getByRole('dialog').getByRole('alert').waitFor();
      await shoot(page, 'force-delete', false);
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

      await page.getByRole('button', { name: 'Edit size of pool linux-x64' }).click();
      await page.getByLabel('Max runners').fill('-1');
      await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
      await page.getByRole('dialog').getByRole('alert').waitFor();
      await shoot(page, 'edit-size', false);
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

      const liveness = page.getByRole('region', { name: 'Liveness checks' });
      await liveness.getByRole('row').nth(1).waitFor();
      await liveness.screenshot({ path: join(DOCS, 'dashboard-liveness.png') });
      log(`wrote ${join(DOCS, 'dashboard-liveness.png')}`);

      const redelivery = page.getByRole('region', { name: 'Webhook redelivery' });
      await redelivery.getByRole('row').nth(1).waitFor();
      await redelivery.screenshot({ path: join(DOCS, 'dashboard-redelivery.png') });
      log(`wrote ${join(DOCS, 'dashboard-redelivery.png')}`);

      await page.getByRole('button', { name: 'Sweep provider simulated now' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Sweep now' }).waitFor();
      await shoot(page, 'sweep-now', false);
      await page.getByRole('dialog').getByRole('button', { name: 'Sweep now' }).click();
      await page.getByRole('status').filter({ hasText: 'sweep/simulated triggered' }).waitFor();

      // The sweep's toast goes after a few seconds: not over the next picture.
      await page.getByRole('status').filter({ hasText: 'sweep/simulated triggered' }).waitFor({ state: 'hidden' });
      await page.getByRole('button', { name: 'Show runners of pool linux-large' }).click();
      const scaleSet = page.getByRole('group', { name: 'Scale set' });
      await scaleSet.getByText('Not yet as the pool says').waitFor();
      await scaleSet.screenshot({ path: join(DOCS, 'dashboard-scale-set.png') });
      log(`wrote ${join(DOCS, 'dashboard-scale-set.png')}`);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Admin token').waitFor();
      await shoot(page, 'login', false);
    } finally {
      await scene.stop();
    }
  } finally {
    await browser.close();
    devServer('stop', port, 'quiet');
    rmSync(db, { recursive: true, force: true });
  }
}

await main();
