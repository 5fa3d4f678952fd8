/**
 * A wait that used more than a third of its bound (and over 5 s) is printed: bounds are generous
 * so that a busy machine slows a test without failing it, and the line shows how close a run came.
 */
export function reportLongWait(what: string, tookMs: number, boundMs: number): void {
  if (tookMs > 5_000 && tookMs > boundMs / 3)
    console.warn(
      `waited ${(tookMs / 1000).toFixed(1)} s for ${what} (bound ${Math.round(boundMs / 1000)} s)`,
    );
}
