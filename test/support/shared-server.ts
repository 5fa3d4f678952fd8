/** What a global setup hands to its projects: the server and its template, and how to end them. */
export interface RunServer {
  readonly adminUrl: string;
  readonly major: number | null;
  readonly templateDatabase: string;
  stop(): Promise<void>;
}

interface Shared {
  readonly ready: Promise<RunServer>;
  users: number;
}

/**
 * Vitest runs a project's global setup once per project, and several projects (unit, chart,
 * integration, e2e, soak) test against the same major: they share one server per run, started by
 * the first project that needs it and stopped by the last one's teardown. Every project's setup
 * runs in vitest's own process, so the count lives on globalThis (each setup file is loaded
 * anew per project: a module-level variable would not be shared).
 */
export async function shareOncePerRun(
  key: string,
  start: () => Promise<RunServer>,
): Promise<{ server: RunServer; release(): Promise<void> }> {
  const slot = Symbol.for(`hookgate.test.${key}`);
  const registry = globalThis as unknown as Record<symbol, Shared | undefined>;
  const shared = registry[slot] ?? { ready: start(), users: 0 };
  registry[slot] = shared;
  shared.users += 1;
  const server = await shared.ready;
  return {
    server,
    async release() {
      shared.users -= 1;
      if (shared.users > 0) return;
      registry[slot] = undefined;
      await server.stop();
    },
  };
}
