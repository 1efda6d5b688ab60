/**
 * Debian's Chromium driven by playwright-core, for the dashboard's browser tests
 * and screenshots. The network here is closed: without these flags Chromium
 * waits on update, sync and QUIC connections that never answer.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.RUNNERFLOW_CHROMIUM ?? '/usr/bin/chromium';

/** Installs Debian's chromium when it is missing and we may (root); otherwise says in one line what to install. */
export function ensureChromium(log: (line: string) => void = () => undefined): string {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  if (process.getuid?.() !== 0) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: install it with "apt-get install -y chromium" (or set RUNNERFLOW_CHROMIUM)`);
  }
  log('installing chromium with apt-get (once)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['install', '-y', 'chromium'], { stdio: 'ignore', env });
  } catch {
    // A fresh image has no package lists yet.
    execFileSync('apt-get', ['update'], { stdio: 'ignore', env });
    execFileSync('apt-get', ['install', '-y', 'chromium'], { stdio: 'ignore', env });
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is still missing`);
  return CHROMIUM;
}

export interface LaunchedBrowser {
  /** A context on a fresh profile: nothing carries over between launches. */
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<LaunchedBrowser> {
  const executablePath = ensureChromium();
  const profile = mkdtempSync(join(tmpdir(), 'runnerflow-chromium-'));
  // Playwright owns --user-data-dir: a persistent context on a fresh directory is that flag.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
