#!/usr/bin/env node
import { tracingConfigured } from '../core/tracing-env.ts';
import { EXIT_OK } from './support/exit-codes.ts';

// Tracing first, and only when OTEL_* asks for it: its instrumentations must be in place before
// pg, express and http load, and without it OpenTelemetry is not loaded at all. The program is
// imported after it for that reason.
if (tracingConfigured()) await import('../core/tracing-init.ts');
const { runCli } = await import('./program.ts');

// `hookgate events list | head`: the reader went away; that ends the command, quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await runCli(process.argv.slice(2));
// A failure ends the process at once (its pools may still be open); success lets a command that
// keeps running (serve) run, and a finished one end when nothing is left to do.
if (code !== EXIT_OK) process.exit(code);
