import { chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { CHROMIUM, chromiumArgs } from './browser.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's one Chromium (browser-server.ts), which each browser test file connects to. */
    chromiumEndpoint: string;
  }
}

/**
 * One headless Chromium for every browser test file of the run (the `e2e-browser` project): each file
 * connects and opens a context of its own (cookies, storage and pages apart), instead of
 * starting a browser of its own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await chromium.launchServer({
    executablePath: CHROMIUM,
    headless: true,
    args: chromiumArgs(),
  });
  project.provide('chromiumEndpoint', server.wsEndpoint());
  return () => server.close();
}
