import { startTracing } from './tracing.ts';

/**
 * Imported first by the CLI when `OTEL_*` asks for traces (services/cli/main.ts), so that the
 * instrumentations are in place before `pg`, `express` and `http` load.
 */
startTracing();
