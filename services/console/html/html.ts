/**
 * Every page is built from this tagged template. Interpolated values are escaped unless they are
 * Html made by this module, so text from a delivery (payloads, headers, ids, types, errors: all
 * chosen by whoever sends webhooks) can only ever become text in the page, never markup. There is
 * no way to mark an arbitrary string as safe: markup comes only from template literals written
 * in the console's own code.
 */
const BRAND = Symbol('hookgate.console.html');

export interface Html {
  readonly [BRAND]: true;
  readonly text: string;
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escapes text for element content and quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => ESCAPES[char] ?? char);
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && (value as Html)[BRAND] === true;
}

function wrap(text: string): Html {
  return { [BRAND]: true, text };
}

export type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map((item: Interpolation) => render(item)).join('');
  if (isHtml(value)) return value.text;
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: readonly Interpolation[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return wrap(out);
}

/** The markup of a whole document, for the response body. */
export function documentText(page: Html): string {
  return `<!doctype html>\n${page.text}`;
}

/**
 * A path inside the console with its query, each part percent-encoded, for href and action
 * attributes. Paths are always relative to the console's root and start with `/`, so no value can
 * turn a link into another scheme (`javascript:`) or another host (`//evil`).
 */
export function consolePath(
  segments: readonly string[],
  query: Readonly<Record<string, string | undefined>> = {},
): string {
  const path = `/${segments.map((segment) => encodeURIComponent(segment)).join('/')}`;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== '') params.set(key, value);
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}
