#!/usr/bin/env node
// node load/driver/main.ts --url http://127.0.0.1:8080 --target stripe,stripe,STRIPE_SECRET \
//   --rate 200 --seconds 60 --out sent.jsonl
// Secrets are read from the environment variables the --target options name, never from argv.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { mixSettings, PROVIDERS } from '../lib/mix.ts';
import { drive } from './driver.ts';

const USAGE = `Usage: node load/driver/main.ts --target ENDPOINT,PROVIDER,SECRET_VAR [--target …] [options]

Sends signed webhook deliveries at a fixed arrival rate (open model) to a hookgate gateway, with
duplicates and several versions per entity, and records every acknowledged one for
"hookgate verify --sent FILE". Prints a JSON summary; exits 1 if any delivery was not a 2xx,
failed or could not be offered at the rate (dropped), 2 on bad options.

Options:
  --url URL                     gateway base URL (default http://127.0.0.1:8080)
  --target E,P,VAR              endpoint name, provider (${PROVIDERS.join(', ')}) and the
                                environment variable holding its secret; repeat for a mix
  --rate N                      arrivals per second (default 100)
  --seconds N                   how long to offer them (default 30)
  --max N                       stop after this many arrivals
  --connections N               HTTP connections (default 32)
  --max-in-flight N             requests outstanding at once before arrivals are dropped (default 2000)
  --timeout MS                  per-request timeout in milliseconds (default 10000)
  --out FILE                    write each acknowledged delivery as a JSON line (for verify)
  --run-id ID                   tag of this run's event ids (letters and digits; default from the clock)
  --later-duplicates R          share of events sent again later (default 0.1)
  --concurrent-duplicates R     share of events sent twice at once (default 0.05)
  --versions-per-entity N       versions per entity (Standard Webhooks targets), sent shuffled (default 4)
  -h, --help                    print this and exit

Example:
  STRIPE_SECRET=whsec_… node load/driver/main.ts --target stripe,stripe,STRIPE_SECRET --rate 200 --seconds 60 --out sent.jsonl
`;

function parseCommandLine() {
  try {
    return parseArgs({ options: OPTIONS });
  } catch (error) {
    process.stderr.write(`load driver: ${(error as Error).message} (see --help)\n`);
    process.exit(2);
  }
}

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
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
} as const;

const { values: given } = parseCommandLine();
if (given.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const { help: _help, ...values } = given;

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
