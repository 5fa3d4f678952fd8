import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run two at a time; each file gets its own database.
    maxWorkers: 2,
    pool: 'forks',
    reporters: ['default'],
  },
});
