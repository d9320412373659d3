import type { Readable } from 'node:stream';

/** Everything a stream carries, as text, once it ends. */
export function collect(stream: Readable): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.on('end', () => resolve(text));
  });
}

/** The first line a stream carries; rejects if it ends first. */
export function firstLine(stream: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const newline = text.indexOf('\n');
      if (newline >= 0) {
        stream.off('data', onData);
        resolve(text.slice(0, newline));
      }
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error(`no line before end: ${text}`)));
  });
}
