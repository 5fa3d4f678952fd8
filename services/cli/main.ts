#!/usr/bin/env node
// First: starts tracing (when OTEL_* asks for it) before pg, express and http load.
import '../core/tracing-init.ts';
import { runCli } from './program.ts';
import { EXIT_OK } from './support/exit.ts';

// `hookgate events list | head`: the reader went away; that ends the command, quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await runCli(process.argv.slice(2));
// A failure ends the process at once (its pools may still be open); success lets a command that
// keeps running (serve) run, and a finished one end when nothing is left to do.
if (code !== EXIT_OK) process.exit(code);
