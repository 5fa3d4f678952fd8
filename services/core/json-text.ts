/**
 * JSON text for people and scripts, of any stored payload. JSON.stringify recurses: a signed
 * payload nested some thousands of levels deep (jsonb stores far deeper) overflows the stack
 * ("Maximum call stack size exceeded"), and indented it would be depth² characters. This writer
 * keeps its own stack, and lays out only the first INDENTED_DEPTH levels on lines: up to there its
 * text is exactly JSON.stringify(value, null, 2)'s, deeper containers are written on one line as
 * JSON.stringify(value) writes them, so the text stays the size of the value. Either way it is the
 * same JSON value.
 */

/** Containers nested deeper than this are written on one line. */
export const INDENTED_DEPTH = 64;

const INDENT = '  ';

type Container =
  | {
      readonly array: readonly unknown[];
      readonly keys: null;
      readonly depth: number;
      index: number;
      any: boolean;
    }
  | {
      readonly array: null;
      readonly object: Record<string, unknown>;
      readonly keys: readonly string[];
      readonly depth: number;
      index: number;
      any: boolean;
    };

/** What JSON.stringify serialises in place of a value: its toJSON, a boxed primitive's value. */
function prepared(value: unknown, key: string): unknown {
  let current = value;
  if (
    current !== null &&
    (typeof current === 'object' || typeof current === 'bigint') &&
    typeof (current as { toJSON?: unknown }).toJSON === 'function'
  )
    current = (current as { toJSON(key: string): unknown }).toJSON(key);
  if (current instanceof Number) return Number(current);
  if (current instanceof String) return String(current);
  if (current instanceof Boolean) return current.valueOf();
  return current;
}

/** Left out of an object, `null` in an array (as JSON.stringify does). */
function omitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/** The text of a value that is not an array or an object; null for those. */
function scalarText(value: unknown): string | null {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      return null;
  }
}

/** Whether a container at `depth` lays its members out on lines of their own. */
const laidOut = (depth: number) => depth < INDENTED_DEPTH;
const lineAt = (depth: number) => `\n${INDENT.repeat(depth)}`;

/** `value` as JSON text (see the file's comment); a cycle throws as JSON.stringify's does. */
export function jsonText(value: unknown): string {
  const out: string[] = [];
  const stack: Container[] = [];
  const open = new Set<object>();

  const write = (raw: unknown, depth: number): void => {
    const text = scalarText(raw);
    if (text !== null) {
      out.push(text);
      return;
    }
    const container = raw as object;
    if (open.has(container)) throw new TypeError('Converting circular structure to JSON');
    if (Array.isArray(container)) {
      if (container.length === 0) {
        out.push('[]');
        return;
      }
      out.push('[');
      open.add(container);
      stack.push({ array: container, keys: null, depth, index: 0, any: false });
      return;
    }
    out.push('{');
    open.add(container);
    const object = container as Record<string, unknown>;
    stack.push({ array: null, object, keys: Object.keys(object), depth, index: 0, any: false });
  };

  const root = prepared(value, '');
  if (omitted(root)) return 'null';
  write(root, 0);
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Container;
    const lines = laidOut(top.depth);
    if (top.array !== null) {
      if (top.index < top.array.length) {
        const index = top.index;
        top.index += 1;
        const item = prepared(top.array[index], String(index));
        out.push(top.any ? ',' : '', lines ? lineAt(top.depth + 1) : '');
        top.any = true;
        if (omitted(item)) out.push('null');
        else write(item, top.depth + 1);
        continue;
      }
      out.push(lines ? lineAt(top.depth) : '', ']');
      open.delete(top.array);
      stack.pop();
      continue;
    }
    let wrote = false;
    while (top.index < top.keys.length) {
      const key = top.keys[top.index] as string;
      top.index += 1;
      const item = prepared(top.object[key], key);
      if (omitted(item)) continue;
      out.push(
        top.any ? ',' : '',
        lines ? lineAt(top.depth + 1) : '',
        JSON.stringify(key),
        lines ? ': ' : ':',
      );
      top.any = true;
      write(item, top.depth + 1);
      wrote = true;
      break;
    }
    if (wrote) continue;
    out.push(top.any && lines ? lineAt(top.depth) : '', '}');
    open.delete(top.object);
    stack.pop();
  }
  return out.join('');
}

/** How many containers deep a value nests (0 for a scalar, 1 for `[]`), without recursing. */
export function jsonDepth(value: unknown): number {
  let deepest = 0;
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth > deepest) deepest = depth;
    for (const child of Array.isArray(node) ? node : Object.values(node)) pending.push([child, depth + 1]);
  }
  return deepest;
}
