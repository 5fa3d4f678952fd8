import { describe, expect, it } from 'vitest';
import { table } from '../../services/cli/support/format.ts';

describe('the CLI table', () => {
  it('aligns numbers right and text left, and a `-` placeholder as its column does', () => {
    const text = table(
      ['ID', 'ATTEMPTS', 'LAST ERROR', 'AGE'],
      [
        ['evt_1', '3', 'timeout after 10 s', '2m05s'],
        ['evt_22', '12', '-', '-'],
        ['123', '-', 'HTTP 503', '850ms'],
      ],
    );
    expect(text).toBe(
      [
        'ID      ATTEMPTS  LAST ERROR          AGE',
        'evt_1          3  timeout after 10 s  2m05s',
        'evt_22        12  -                       -',
        // An id that looks like a number stays in its text column's place.
        '123            -  HTTP 503            850ms',
        '',
      ].join('\n'),
    );
  });
});
