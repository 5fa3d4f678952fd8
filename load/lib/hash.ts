// Deterministic pseudo-randomness from (seed, index): every VU of a k6 run, and the Node driver,
// derives the same plan for the same arrival index without sharing memory. Plain JavaScript
// only (no Node or k6 globals), so the module runs in both.

/** A 32-bit hash of a string (FNV-1a). */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Mixes two 32-bit values into one (a murmur3 finaliser). */
export function mix32(a: number, b: number): number {
  let h = (a ^ Math.imul(b, 0x9e3779b1)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A number in [0, 1) determined by (seed, index, salt). */
export function unit(seed: number, index: number, salt: number): number {
  return mix32(mix32(seed, index), salt) / 4_294_967_296;
}

/** A permutation of 0..n-1 determined by (seed, group). */
export function permutation(seed: number, group: number, n: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i -= 1) {
    const j = Math.floor(unit(seed, group, 0x5eed + i) * (i + 1));
    const held = order[i]!;
    order[i] = order[j]!;
    order[j] = held;
  }
  return order;
}
