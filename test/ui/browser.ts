/** One Chromium per test file, a fresh page per test, signed in to the stack's dashboard. */
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { launchChromium, type LaunchedBrowser } from '../../devstack/browser';
import type { DevStack } from '../../devstack/stack';

export interface BrowserHandle {
  launched: LaunchedBrowser;
  page: Page;
}

export function useBrowser(): BrowserHandle {
  const handle = {} as BrowserHandle;
  beforeAll(async () => {
    handle.launched = await launchChromium();
  });
  afterEach(async () => {
    await handle.page?.close();
  });
  afterAll(async () => {
    await handle.launched?.close();
  });
  return handle;
}

export async function openDashboard(handle: BrowserHandle, stack: DevStack, options: { signIn?: boolean } = {}): Promise<Page> {
  const page = await handle.launched.context.newPage();
  handle.page = page;
  // Playwright's own waits bound every step; keep them below the test timeout so a failure names its step.
  page.setDefaultTimeout(30_000);
  await page.goto(`${stack.api.url}/ui`);
  if (options.signIn !== false) {
    await page.getByLabel('Admin token').fill(stack.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('region', { name: 'Pools' }).waitFor();
  }
  return page;
}

/** Selects a pool on the page so its runners are shown. */
export async function showPool(page: Page, pool: string): Promise<void> {
  await page.getByRole('button', { name: `Show runners of pool ${pool}` }).click();
  await page.getByRole('heading', { name: `Runners of pool ${pool}` }).waitFor();
}

/** The pool's row in the Pools table. */
export function poolRow(page: Page, pool: string): Locator {
  return page
    .getByRole('region', { name: 'Pools' })
    .getByRole('row')
    .filter({ has: page.getByRole('button', { name: `Show runners of pool ${pool}`, exact: true }) });
}

/** A runner's row (not its timeline) wherever it is listed. */
export function runnerRow(page: Page, runner: string): Locator {
  return page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: runner, exact: true }) });
}
