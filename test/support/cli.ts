import { runCli } from '../../services/cli/program.ts';

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stderr then stdout, as one text to match against. */
  readonly output: string;
}

/**
 * Runs one `hookgate` command line in this process (the real program, commands and database
 * access; no child process): its exit code, and what it wrote to stdout and stderr. The
 * environment is overridden for the run only (undefined unsets). One run at a time per process.
 */
export async function runCliInProcess(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): Promise<CliRun> {
  const saved = new Map(Object.keys(env).map((key) => [key, process.env[key]]));
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  let stdout = '';
  let stderr = '';
  const realOut = process.stdout.write.bind(process.stdout);
  const realErr = process.stderr.write.bind(process.stderr);
  const capture =
    (append: (text: string) => void) =>
    (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
  process.stdout.write = capture((text) => {
    stdout += text;
  }) as typeof process.stdout.write;
  process.stderr.write = capture((text) => {
    stderr += text;
  }) as typeof process.stderr.write;
  const exitCode = process.exitCode;
  try {
    const code = await runCli(args, {
      out: (text) => {
        stdout += text;
      },
      err: (text) => {
        stderr += text;
      },
    });
    // A command that reports failure through process.exitCode (verify) rather than throwing.
    const reported = typeof process.exitCode === 'number' && process.exitCode !== 0 ? process.exitCode : 0;
    return { code: code || reported, stdout, stderr, output: `${stderr}${stdout}` };
  } finally {
    process.stdout.write = realOut;
    process.stderr.write = realErr;
    process.exitCode = exitCode;
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}
