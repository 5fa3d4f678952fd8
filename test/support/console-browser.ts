import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ROOT } from './process.ts';

// What the console's browser tests share: where screenshots go, and the page events that say a
// hostile payload ran (a dialog, a CSP refusal, an uncaught error).

const SHOTS = join(ROOT, '.screenshots/console');
const DOC_SHOTS = join(ROOT, 'docs/images');

/**
 * A full-page screenshot in .screenshots/console/ (git-ignored), every run; with
 * CONSOLE_DOCS_SCREENSHOTS=1 a `forDocs` one also refreshes docs/images/console-<name>.png.
 */
export async function shot(page: Page, name: string, forDocs = false): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  const file = join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  if (forDocs && process.env.CONSOLE_DOCS_SCREENSHOTS === '1')
    copyFileSync(file, join(DOC_SHOTS, `console-${name}.png`));
}

export interface PageWatch {
  readonly dialogs: string[];
  readonly cspMessages: string[];
  readonly pageErrors: string[];
  /** Records the page's dialogs (dismissed), CSP refusals and uncaught errors; returns the page. */
  watch(page: Page): Page;
}

export function watchPages(): PageWatch {
  const dialogs: string[] = [];
  const cspMessages: string[] = [];
  const pageErrors: string[] = [];
  return {
    dialogs,
    cspMessages,
    pageErrors,
    watch(page) {
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) cspMessages.push(message.text());
      });
      page.on('pageerror', (error) => pageErrors.push(error.message));
      return page;
    },
  };
}
