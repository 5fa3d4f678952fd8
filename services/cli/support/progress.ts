import { SingleBar } from 'cli-progress';

export interface Progress {
  /** Sets the total once it is known (0 or less: unknown). */
  total(total: number): void;
  advance(by: number): void;
  stop(): void;
}

const NONE: Progress = { total() {}, advance() {}, stop() {} };

/**
 * A progress bar on stderr when stderr is a terminal; nothing at all otherwise, so scripts,
 * CI logs and `--json` consumers see only the result.
 */
export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return NONE;
  const bar = new SingleBar({
    format: `${label} [{bar}] {value}/{total} {percentage}% eta {eta_formatted}`,
    stream,
    hideCursor: true,
    clearOnComplete: true,
    etaBuffer: 50,
  });
  bar.start(0, 0);
  let value = 0;
  return {
    total(total) {
      bar.setTotal(Math.max(total, value));
    },
    advance(by) {
      value += by;
      if (value > bar.getTotal()) bar.setTotal(value);
      bar.update(value);
    },
    stop() {
      bar.stop();
    },
  };
}
