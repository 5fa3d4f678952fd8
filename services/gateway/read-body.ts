import type { IncomingMessage } from 'node:http';

/** Why a body could not be read; `type` follows body-parser's names, which the error handler maps. */
export class BodyReadError extends Error {
  readonly type: 'entity.too.large' | 'encoding.unsupported' | 'request.aborted' | 'budget.exceeded';

  constructor(type: BodyReadError['type'], message: string) {
    super(message);
    this.type = type;
  }
}

/**
 * Reads a request body of at most `limit` bytes. Unlike body-parser, which reads a refused body
 * to its end before answering, this stops at once: a declared Content-Length over the limit is
 * refused before a byte is read, and a chunked body as soon as it passes the limit (the caller
 * then answers and closes the connection).
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  /** Asked for each chunk's bytes as they arrive; false stops reading (see BodyBudget). */
  grow?: (bytes: number) => boolean,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      reject(new BodyReadError('encoding.unsupported', `content-encoding ${encoding} is not accepted`));
      return;
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      reject(new BodyReadError('entity.too.large', 'declared length over the limit'));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('close', onClose);
      req.off('error', onAborted);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        cleanup();
        req.pause();
        reject(new BodyReadError('entity.too.large', 'body over the limit'));
        return;
      }
      if (grow && !grow(chunk.length)) {
        cleanup();
        req.pause();
        reject(new BodyReadError('budget.exceeded', 'the gateway holds as many body bytes as it may'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onAborted = () => {
      cleanup();
      reject(new BodyReadError('request.aborted', 'the client closed the connection'));
    };
    const onClose = () => {
      if (!req.complete) onAborted();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onAborted);
    req.on('close', onClose);
    req.on('error', onAborted);
  });
}
