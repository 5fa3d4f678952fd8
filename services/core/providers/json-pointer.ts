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

// Pointers come from provider defaults and the configuration, and each is evaluated on every
// delivery: parsed once. Bounded in case a caller passes pointers of its own.
const POINTER_CACHE_LIMIT = 1024;
const parsedPointers = new Map<string, readonly string[] | null>();

/** The unescaped tokens of a pointer, or null when it is not a valid one. */
function tokensOf(pointer: string): readonly string[] | null {
  let tokens = parsedPointers.get(pointer);
  if (tokens === undefined) {
    tokens = !isJsonPointer(pointer)
      ? null
      : pointer === ''
        ? []
        : pointer.slice(1).split('/').map(unescapeToken);
    if (parsedPointers.size >= POINTER_CACHE_LIMIT) parsedPointers.clear();
    parsedPointers.set(pointer, tokens);
  }
  return tokens;
}

/** Evaluates an RFC 6901 pointer; `undefined` when it is invalid or names nothing. */
export function evaluatePointer(document: unknown, pointer: string): unknown {
  const tokens = tokensOf(pointer);
  if (tokens === null) return undefined;
  let current: unknown = document;
  for (const token of tokens) {
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
