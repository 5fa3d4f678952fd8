import { startTracing } from './tracing.ts';

/**
 * Imported first by the CLI, so that when `OTEL_*` asks for traces the instrumentations are in
 * place before `pg`, `express` and `http` load. Does nothing when tracing is not configured.
 */
startTracing();
