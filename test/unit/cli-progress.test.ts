import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { progressBar } from '../../services/cli/support/progress.ts';

function stream(isTTY: boolean) {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  Object.assign(out, {
    isTTY,
    columns: 100,
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
  });
  return { out: out as unknown as NodeJS.WriteStream, text: () => text };
}

describe('progress bar', () => {
  it('draws on a terminal', () => {
    const tty = stream(true);
    const bar = progressBar('requeue', tty.out);
    bar.total(10);
    bar.advance(5);
    bar.advance(5);
    bar.stop();
    expect(tty.text()).toMatch(/requeue \[.*\] \d+\/10/);
  });

  it('writes nothing when stderr is not a terminal (scripts, CI, --json)', () => {
    const pipe = stream(false);
    const bar = progressBar('prune', pipe.out);
    bar.total(3);
    bar.advance(3);
    bar.stop();
    expect(pipe.text()).toBe('');
  });
});
