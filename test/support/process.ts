import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reportLongWait } from './long-wait.ts';

/** Secrets the tests configure (and their base64 key parts), which no output may contain. */
const KNOWN_SECRETS = [
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
  'C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
  'whsec_test_stripe_secret_for_hookgate',
  'github-load-mix-secret',
  'shpss_test_secret_for_hookgate',
  'whsec_demo_only_not_a_real_secret',
  'whsec_yVg1LulcM3w0Om+AAVsaLtF/Sk2F2QRo',
  'yVg1LulcM3w0Om+AAVsaLtF/Sk2F2QRo',
];

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const CLI = join(ROOT, 'services/cli/main.ts');

export interface RunningProcess {
  readonly child: ChildProcess;
  /** Everything written so far to stdout and stderr. */
  output(): string;
  /** Resolves with the first output line matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  exited(): Promise<number | string>;
}

export interface HookgateOptions {
  readonly env?: Record<string, string | undefined>;
  readonly cwd?: string;
  /** The checkout whose hookgate runs (another release's, for upgrade tests); this one by default. */
  readonly root?: string;
}

/** Starts `hookgate <args>` as a real process on the pinned Node.js. */
export function startHookgate(args: readonly string[], options: HookgateOptions = {}): RunningProcess {
  const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'info', ...options.env };
  const root = options.root ?? ROOT;
  const child = spawn(process.execPath, [join(root, 'services/cli/main.ts'), ...args], {
    cwd: options.cwd ?? root,
    env: env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  // Every hookgate process a test runs is checked for leaked secrets when it ends: the
  // secrets the tests configure must never appear in logs or command output.
  const exit = new Promise<number | string>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      const leaked = KNOWN_SECRETS.filter((secret) => text.includes(secret));
      if (leaked.length > 0) reject(new Error(`hookgate printed a configured secret:\n${text}`));
      else resolve(code ?? signal ?? 'unknown');
    });
  });
  return {
    child,
    output: () => text,
    exited: () => exit,
    waitFor(pattern, timeoutMs = 30_000) {
      const started = Date.now();
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = text.split('\n').find((candidate) => pattern.test(candidate));
          if (line !== undefined) {
            cleanup();
            reportLongWait(String(pattern), Date.now() - started, timeoutMs);
            resolve(line);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${text}`));
        }, timeoutMs);
        const ended = () => {
          cleanup();
          reject(new Error(`process ended before ${pattern}; output:\n${text}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', ended);
        };
        listeners.add(check);
        child.once('exit', ended);
        check();
      });
    },
  };
}

/** Runs a hookgate command to completion. */
export async function runHookgate(
  args: readonly string[],
  options: HookgateOptions = {},
): Promise<{ code: number | string; output: string }> {
  const running = startHookgate(args, options);
  const code = await running.exited();
  return { code, output: running.output() };
}
