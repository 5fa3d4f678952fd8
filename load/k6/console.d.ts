// k6 gives every VU a console (its lines go to `--console-output FILE`), but @types/k6 does
// not declare it. Declared compatibly with Node's, since the main tsconfig sees both.
interface Console {
  log(...data: unknown[]): void;
  warn(...data: unknown[]): void;
}
declare var console: Console;
