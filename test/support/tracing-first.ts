import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { startTracing } from '../../services/core/tracing.ts';

/**
 * Imported first by a test file: tracing with an in-memory exporter starts before the modules
 * it instruments load, as `services/core/tracing-init.ts` does for the CLI.
 */
export const exporter = new InMemorySpanExporter();
export const tracing = startTracing({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
