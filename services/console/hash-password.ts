import { HookgateError } from '../core/errors.ts';
import { hashPassword } from './security/passwords.ts';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 4_096)
      throw new HookgateError('usage_invalid', 'The password on stdin is longer than 4096 bytes.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `hookgate console hash-password`: the password comes on stdin (never an argument, which the
 * process list and shell history would keep); one trailing newline is dropped.
 */
export async function hashPasswordCommand(): Promise<void> {
  if (process.stdin.isTTY) {
    throw new HookgateError(
      'usage_invalid',
      'Pipe the password in: printf \'%s\' "$PASSWORD" | hookgate console hash-password',
    );
  }
  const password = (await readStdin()).replace(/\r?\n$/, '');
  process.stdout.write(`${await hashPassword(password)}\n`);
}
