import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import {
  blockListOf,
  CONSOLE_ROLES,
  type ConsoleConfig,
  type ConsoleRole,
} from '../core/config/console-schema.ts';
import { HookgateError } from '../core/errors.ts';
import { type PasswordHash, parsePasswordHash } from './security/passwords.ts';

/** What the console runs with, once the environment and the users file are read. */
export interface ConsoleSettings {
  readonly host: string;
  readonly port: number;
  /** The embedded demo on a loopback address: no sign-in, cookies without Secure. */
  readonly demo: boolean;
  readonly sessionSecret: string | Buffer;
  readonly users: ReadonlyMap<
    string,
    { readonly name: string; readonly hash: PasswordHash; readonly role: ConsoleRole }
  >;
  readonly tokens: readonly { readonly name: string; readonly sha256: string; readonly role: ConsoleRole }[];
  readonly proxy: {
    readonly trusted: BlockList;
    readonly userHeader: string;
    readonly role: ConsoleRole;
  } | null;
  readonly config: ConsoleConfig;
}

const LOOPBACK = (() => {
  const list = new BlockList();
  list.addSubnet('127.0.0.0', 8, 'ipv4');
  list.addAddress('::1', 'ipv6');
  return list;
})();

export function isLoopback(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return LOOPBACK.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

const portSchema = z.coerce.number().int().min(0).max(65_535);

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * `name:hash` or `name:hash:role` per line (role `viewer` or `operator`, default operator: a hash
 * never holds a colon); blank lines and lines starting with # are skipped.
 */
export function parseUsersFile(
  text: string,
  file: string,
): Array<{ name: string; passwordHash: string; role: ConsoleRole }> {
  const users: Array<{ name: string; passwordHash: string; role: ConsoleRole }> = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const [name = '', passwordHash = '', role = 'operator', ...rest] = line.split(':');
    if (!/^[A-Za-z0-9._@+-]{1,100}$/.test(name) || passwordHash === '' || rest.length > 0) {
      throw new HookgateError(
        'config_invalid',
        `${file} line ${index + 1}: expected name:hash or name:hash:role (a user name, a colon, a hash from "hookgate console hash-password", optionally a colon and viewer or operator).`,
      );
    }
    if (!(CONSOLE_ROLES as readonly string[]).includes(role)) {
      throw new HookgateError(
        'config_invalid',
        `${file} line ${index + 1}: the role "${role}" is not viewer or operator.`,
      );
    }
    users.push({ name, passwordHash, role: role as ConsoleRole });
  });
  return users;
}

/**
 * Resolves the console's settings: env CONSOLE_LISTEN_ADDRESS, CONSOLE_PORT, CONSOLE_SESSION_SECRET
 * and CONSOLE_USERS_FILE win over their keys. Outside the loopback demo, a console without a
 * session secret or without any way to sign in is refused (exit 2), never started open.
 */
export function consoleSettings(
  config: ConsoleConfig,
  embedded: boolean,
  env: NodeJS.ProcessEnv = process.env,
): ConsoleSettings {
  const host = envValue(env, 'CONSOLE_LISTEN_ADDRESS') ?? config.listenAddress ?? '127.0.0.1';
  if (isIP(host) === 0) {
    throw new HookgateError('env_invalid', `CONSOLE_LISTEN_ADDRESS="${host}" is not an IP address.`);
  }
  const portText = envValue(env, 'CONSOLE_PORT');
  let port = config.port;
  if (portText !== undefined) {
    const parsed = portSchema.safeParse(portText);
    if (!parsed.success)
      throw new HookgateError('env_invalid', `CONSOLE_PORT="${portText}" is not a port number.`);
    port = parsed.data;
  }
  const demo = embedded && isLoopback(host);

  const users = new Map<string, { name: string; hash: PasswordHash; role: ConsoleRole }>();
  const usersFile = envValue(env, 'CONSOLE_USERS_FILE') ?? config.usersFile;
  const fromFile = (() => {
    if (!usersFile) return [];
    let text: string;
    try {
      text = readFileSync(usersFile, 'utf8');
    } catch (error) {
      throw new HookgateError('config_unreadable', `Cannot read the console users file ${usersFile}.`, {
        cause: error,
      });
    }
    return parseUsersFile(text, usersFile);
  })();
  for (const [index, user] of [...config.users, ...fromFile].entries()) {
    const where = index < config.users.length ? `console.users[${index}]` : `${usersFile} (${user.name})`;
    const hash = parsePasswordHash(user.passwordHash);
    if (!hash) {
      throw new HookgateError(
        'config_invalid',
        `${where}: the password hash is not one hookgate can check; make one with "hookgate console hash-password".`,
      );
    }
    const key = user.name.toLowerCase();
    if (users.has(key))
      throw new HookgateError('config_invalid', `${where}: user "${user.name}" is named twice.`);
    users.set(key, { name: user.name, hash, role: user.role });
  }
  const proxy = config.proxyAuth
    ? {
        trusted: blockListOf(config.proxyAuth.trustedAddresses),
        userHeader: config.proxyAuth.userHeader.toLowerCase(),
        role: config.proxyAuth.role,
      }
    : null;

  const secret = envValue(env, 'CONSOLE_SESSION_SECRET') ?? config.sessionSecret;
  if (secret !== undefined && secret.length < 32) {
    throw new HookgateError(
      'config_invalid',
      'CONSOLE_SESSION_SECRET must be at least 32 characters (use a random value).',
    );
  }
  if (!demo) {
    const problems: string[] = [];
    if (secret === undefined) {
      problems.push(
        'console.sessionSecret (or env CONSOLE_SESSION_SECRET) is not set: it signs the sessions every replica accepts',
      );
    }
    if (users.size === 0 && config.tokens.length === 0 && !proxy) {
      problems.push(
        'nobody can sign in: set console.users or console.usersFile (hashes from "hookgate console hash-password"), console.tokens, or console.proxyAuth',
      );
    }
    if (problems.length > 0) {
      const why = embedded
        ? `it listens on ${host}, not loopback, so the demo's open console is refused`
        : 'sign-in is required outside the embedded demo';
      throw new HookgateError(
        'config_invalid',
        `The console cannot start (${why}):\n  ${problems.join('\n  ')}`,
      );
    }
  }
  return {
    host,
    port,
    demo,
    // The demo needs no shared key: sessions last as long as the process.
    sessionSecret: secret ?? randomBytes(32),
    users,
    tokens: config.tokens,
    proxy,
    config,
  };
}
