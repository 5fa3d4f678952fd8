const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

/** Whether `pointer` is a syntactically valid RFC 6901 JSON pointer (config validation uses this). */
export function isJsonPointer(pointer: string): boolean {
  if (pointer === '') return true;
  if (!pointer.startsWith('/')) return false;
  // `~` may only start the escapes `~0` and `~1`.
  return !/~(?![01])/.test(pointer);
}

function unescapeToken(token: string): string {
  // Order matters: `~01` must become `~1`, not `/`.
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Evaluates an RFC 6901 pointer; `undefined` when it is invalid or names nothing. */
export function evaluatePointer(document: unknown, pointer: string): unknown {
  if (!isJsonPointer(pointer)) return undefined;
  if (pointer === '') return document;
  let current: unknown = document;
  for (const raw of pointer.slice(1).split('/')) {
    const token = unescapeToken(raw);
    if (Array.isArray(current)) {
      // `-` (past the end) and non-canonical indices such as `01` name nothing.
      if (!ARRAY_INDEX.test(token)) return undefined;
      const index = Number(token);
      if (index >= current.length) return undefined;
      current = current[index];
    } else if (current !== null && typeof current === 'object') {
      // Own properties only: `/constructor` must not reach Object.prototype.
      if (!Object.hasOwn(current, token)) return undefined;
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}
