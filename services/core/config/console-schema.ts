import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { durationMs } from './duration.ts';

/** An IP address, or a CIDR block such as 10.0.0.0/8 or fd00::/8. */
export const addressOrBlock = z.string().refine((value) => {
  const [address, bits, ...rest] = value.split('/');
  if (rest.length > 0 || !address) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (bits === undefined) return true;
  const prefix = Number(bits);
  return /^\d{1,3}$/.test(bits) && prefix >= 0 && prefix <= (family === 4 ? 32 : 128);
}, 'must be an IP address or a CIDR block such as 10.0.0.0/8');

/** A BlockList of addresses and blocks already validated by addressOrBlock. */
export function blockListOf(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/') as [string, string | undefined];
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return list;
}

const userName = z
  .string()
  .regex(/^[A-Za-z0-9._@+-]{1,100}$/, 'user names use letters, digits and . _ @ + - (at most 100)');

/** `hookgate console hash-password` writes these. */
const passwordHash = z
  .string()
  .regex(
    /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/,
    'must be a hash made by "hookgate console hash-password" (scrypt$...)',
  );

/**
 * What a signed-in user or an access token may do: `viewer` reads every page and every API read;
 * `operator` also takes the actions (requeue, discard, pause, redeliver, release, …). Unset means
 * operator, what every user and token could do before roles existed.
 */
export const CONSOLE_ROLES = ['viewer', 'operator'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];
const role = z.enum(CONSOLE_ROLES, { error: 'must be viewer or operator' }).default('operator');

/**
 * The management API (`/api/v1`, served by the console): its per-token rate limit, how long an
 * Idempotency-Key's answer is kept, and the largest request body.
 */
const apiSchema = z
  .strictObject({
    /** Requests one access token may make per minute on one console replica; past it, 429. */
    rateLimit: z.number().int().min(1).max(100_000).default(600),
    /** How long an action's Idempotency-Key and its answer are kept (a retry within it gets the answer back). */
    idempotencyTtl: durationMs
      .pipe(
        z
          .number()
          .min(3_600_000)
          .max(7 * 86_400_000),
      )
      .default(86_400_000),
    /** The largest request body (JSON) an action accepts. */
    maxBodyBytes: z.number().int().min(1_024).max(1_048_576).default(65_536),
  })
  .prefault({});

/**
 * The web console (`hookgate serve --role console`, and `--role all` with the embedded demo
 * database). Sign-in is required unless it runs as that demo on a loopback address.
 */
export const consoleSchema = z
  .strictObject({
    /** Address the console listens on (env CONSOLE_LISTEN_ADDRESS wins). Unset: 127.0.0.1; the chart sets 0.0.0.0. */
    listenAddress: z
      .string()
      .refine((value) => isIP(value) !== 0, 'must be an IP address such as 0.0.0.0, 127.0.0.1 or ::')
      .optional(),
    /** Its port (env CONSOLE_PORT wins). */
    port: z.number().int().min(0).max(65_535).default(8081),
    /**
     * Key that signs session cookies and CSRF tokens, shared by every console replica (env
     * CONSOLE_SESSION_SECRET wins). Required outside the demo; at least 32 characters.
     */
    sessionSecret: z.string().min(32, 'must be at least 32 characters (use a random value)').optional(),
    /** How long a sign-in lasts. */
    sessionTtl: durationMs
      .pipe(
        z
          .number()
          .min(300_000)
          .max(7 * 86_400_000),
      )
      .default(12 * 3_600_000),
    /** People who sign in with a password: `passwordHash` from `hookgate console hash-password`. */
    users: z
      .array(z.strictObject({ name: userName, passwordHash, role }))
      .max(1_000)
      .default([]),
    /**
     * A file of `name:hash` lines (a mounted Secret), read at start, added to `users` (env
     * CONSOLE_USERS_FILE wins).
     */
    usersFile: z.string().min(1).optional(),
    /**
     * Access tokens for scripts and the API (`Authorization: Bearer`): a name, the hex SHA-256 of
     * the token (`hookgate console new-token` makes both), and a role.
     */
    tokens: z
      .array(
        z.strictObject({
          name: userName,
          sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the hex SHA-256 of the token (64 hex digits)'),
          role,
        }),
      )
      .max(1_000)
      .default([]),
    /**
     * Sign-in by an authenticating proxy in front (oauth2-proxy): a request whose TCP peer is one
     * of `trustedAddresses` is signed in as the user its `userHeader` names. From any other
     * address the header is ignored.
     */
    proxyAuth: z
      .strictObject({
        trustedAddresses: z.array(addressOrBlock).min(1, 'name the proxy: at least one address or block'),
        userHeader: z
          .string()
          .regex(/^[A-Za-z0-9-]{1,100}$/, 'must be a header name such as X-Forwarded-User')
          .default('X-Forwarded-User'),
        /** The role of every user the proxy signs in. */
        role,
      })
      .optional(),
    /**
     * Proxies in front of the console whose X-Forwarded-For entry is trusted, for counting failed
     * sign-ins per client (0: the socket's peer, so behind an ingress all clients share its count).
     */
    trustedProxyHops: z.number().int().min(0).max(10).default(0),
    /** Failed sign-ins per source and user name before each further attempt must wait. */
    loginLimit: z
      .strictObject({
        maxFailures: z.number().int().min(1).max(100).default(5),
        /** A source's failures are forgotten this long after its last one. */
        window: durationMs.pipe(z.number().min(60_000).max(86_400_000)).default(900_000),
        /** The first wait past maxFailures; doubled per further failure. */
        delay: durationMs.pipe(z.number().min(1_000).max(3_600_000)).default(30_000),
        /** The longest wait (it caps the first one too). */
        maxDelay: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(900_000),
      })
      .prefault({}),
    /** Connections the console process holds for its pages and actions. */
    poolSize: z.number().int().min(2).max(50).default(4),
    /** Longest any console statement may run; a search that would take longer is stopped and says so. */
    queryTimeout: durationMs.pipe(z.number().min(100).max(60_000)).default(5_000),
    /** Events per page. */
    pageSize: z.number().int().min(10).max(500).default(50),
    /**
     * Most inbox rows one page of a filtered list reads (filters an index cannot answer alone:
     * endpoint, type, settled statuses); past it the page offers to search further back.
     */
    scanRows: z.number().int().min(1_000).max(1_000_000).default(20_000),
    /** The overview's latency percentiles come from at most this many of the last hour's events. */
    latencySample: z.number().int().min(100).max(100_000).default(10_000),
    api: apiSchema,
  })
  .superRefine((section, ctx) => {
    const names = new Set<string>();
    for (const [index, user] of [...(section.users ?? []), ...(section.tokens ?? [])].entries()) {
      const key = user.name.toLowerCase();
      if (names.has(key)) {
        const inUsers = index < (section.users ?? []).length;
        ctx.addIssue({
          code: 'custom',
          path: inUsers ? ['users', index, 'name'] : ['tokens', index - (section.users ?? []).length, 'name'],
          message: `"${user.name}" is named twice`,
        });
      }
      names.add(key);
    }
  });

export type ConsoleConfig = z.output<typeof consoleSchema>;
