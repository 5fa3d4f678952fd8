import { defineConfig } from 'vitest/config';

// The tests of the image and of the chart on a real Kubernetes (`make image`, `make test-k8s`):
// not a project of the root vitest.config.ts, so `make test` and CI never run them. One file at a
// time: they share the one-node cluster and the machine's two cores.
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/k8s/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    maxWorkers: 1,
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default'],
  },
});
