#!/usr/bin/env node
// node load/driver/main.ts --url http://127.0.0.1:8080 --target stripe,stripe,STRIPE_SECRET \
//   --rate 200 --seconds 60 --out sent.jsonl
// Secrets are read from the environment variables the --target options name, never from argv.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { mixSettings, PROVIDERS } from '../lib/mix.ts';
import { drive } from './driver.ts';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    target: { type: 'string', multiple: true },
    rate: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '30' },
    max: { type: 'string' },
    connections: { type: 'string', default: '32' },
    'max-in-flight': { type: 'string', default: '2000' },
    timeout: { type: 'string', default: '10000' },
    out: { type: 'string' },
    'run-id': { type: 'string' },
    'later-duplicates': { type: 'string', default: '0.1' },
    'concurrent-duplicates': { type: 'string', default: '0.05' },
    'versions-per-entity': { type: 'string', default: '4' },
  },
});

const target = z
  .string()
  .transform((text) => text.split(','))
  .pipe(z.tuple([z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/), z.enum(PROVIDERS), z.string().min(1)]))
  .transform(([endpoint, provider, variable], ctx) => {
    const secret = process.env[variable];
    if (!secret) {
      ctx.addIssue({ code: 'custom', message: `environment variable ${variable} is not set` });
      return z.NEVER;
    }
    return { endpoint, provider, secret };
  });

const options = z
  .object({
    url: z.url(),
    target: z.array(target).min(1, 'give at least one --target endpoint,provider,SECRET_ENV_VAR'),
    rate: z.coerce.number().positive().max(100_000),
    seconds: z.coerce.number().positive().max(86_400),
    max: z.coerce.number().int().positive().optional(),
    connections: z.coerce.number().int().min(1).max(4096),
    'max-in-flight': z.coerce.number().int().min(2).max(1_000_000),
    timeout: z.coerce.number().int().min(100).max(600_000),
    out: z.string().optional(),
    'run-id': z
      .string()
      .regex(/^[A-Za-z0-9]{1,32}$/)
      .optional(),
    'later-duplicates': z.coerce.number(),
    'concurrent-duplicates': z.coerce.number(),
    'versions-per-entity': z.coerce.number().int(),
  })
  .parse(values);

const result = await drive({
  baseUrl: options.url,
  targets: options.target,
  rate: options.rate,
  seconds: options.seconds,
  ...(options.max === undefined ? {} : { maxArrivals: options.max }),
  connections: options.connections,
  maxInFlight: options['max-in-flight'],
  requestTimeoutMs: options.timeout,
  mix: mixSettings({
    laterDuplicates: options['later-duplicates'],
    concurrentDuplicates: options['concurrent-duplicates'],
    versionsPerEntity: options['versions-per-entity'],
  }),
  run: {
    id: options['run-id'] ?? `n${Date.now().toString(36)}`,
    startedAt: Math.floor(Date.now() / 1000),
  },
  ...(options.out === undefined ? {} : { recordTo: options.out }),
});
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
process.exitCode = result.non2xx + result.errors + result.dropped > 0 ? 1 : 0;
