import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's Chromium (`make chromium` installs it); never a browser Playwright downloads. */
export const CHROMIUM = '/usr/bin/chromium';

export interface TestBrowser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/**
 * A fresh headless Chromium with its own empty profile, nothing of it reaching the network on
 * its own (no updates, sync or background requests), sandboxless only when running as root
 * (Chromium refuses its sandbox there).
 */
export async function launchBrowser(): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'hookgate-chromium-'));
  const args = [
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-default-apps',
    '--no-first-run',
    '--disable-dev-shm-usage',
    '--metrics-recording-only',
  ];
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args,
    viewport: { width: 1360, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
