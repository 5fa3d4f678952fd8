/** Edit distance (insertions, deletions, substitutions, and swaps of neighbours) between two words. */
function distance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate a typo most likely meant (`strpie` → `stripe`), or undefined when none is
 * close: at most a third of the word's letters apart (one for short words), nearest first.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const typed = word.toLowerCase();
  const limit = Math.max(1, Math.floor(typed.length / 3));
  let best: { candidate: string; score: number } | undefined;
  for (const candidate of candidates) {
    const score = distance(typed, candidate.toLowerCase());
    if (score <= limit && (best === undefined || score < best.score)) best = { candidate, score };
  }
  return best?.candidate;
}

/** ` Did you mean "stripe"?`, or nothing: appended to an "unknown …" sentence. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const match = closest(word, candidates);
  return match === undefined ? '' : ` Did you mean "${match}"?`;
}
