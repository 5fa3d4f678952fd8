import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { inject } from 'vitest';

/** Debian's Chromium (`make chromium` installs it); never a browser Playwright downloads. */
export const CHROMIUM = '/usr/bin/chromium';

export interface TestBrowser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium's flags: nothing of it reaches the network on its own; sandboxless only as root. */
export function chromiumArgs(): string[] {
  const args = [
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-default-apps',
    '--no-first-run',
    '--disable-dev-shm-usage',
    '--metrics-recording-only',
  ];
  // Chromium refuses its sandbox as root.
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return args;
}

const VIEWPORT = { width: 1360, height: 900 };

/**
 * A browser context of the test file's own, empty (no cookies, storage or pages of another file):
 * in the run's one Chromium when the `e2e-browser` project started it (browser-server.ts), otherwise
 * (the file run alone in another project) a fresh headless Chromium with an empty profile.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  const endpoint = inject('chromiumEndpoint');
  if (endpoint) {
    const browser = await chromium.connect(endpoint);
    const context = await browser.newContext({ viewport: VIEWPORT });
    return {
      context,
      async close() {
        await context.close();
        await browser.close();
      },
    };
  }
  const profile = mkdtempSync(join(tmpdir(), 'hookgate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: chromiumArgs(),
    viewport: VIEWPORT,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
