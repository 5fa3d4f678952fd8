import type { Response } from 'express';
import { documentText, type Html } from './html.ts';

export function sendPage(res: Response, page: Html, status = 200): void {
  res.status(status).type('html').send(documentText(page));
}
