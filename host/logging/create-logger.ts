import pino, { type DestinationStream } from 'pino';
import type { Logger } from './logger.ts';

export interface LoggerOptions {
  level: string;
  /** Removes held secrets from a serialized line; applied to every line, whatever field holds the secret. */
  redact: (line: string) => string;
  destination?: DestinationStream;
}

/**
 * pino's own `redact` works on known key paths; a secret can also hide inside an error message or a URL,
 * so every serialized line additionally passes through a value-based redactor before it is written.
 */
export function createLogger({ level, redact, destination = pino.destination(2) }: LoggerOptions): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          '*.apiKey',
          '*.api_key',
          '*.token',
          '*.authorization',
          '*.headers.authorization',
          '*.password',
        ],
        censor: '[REDACTED]',
      },
      hooks: { streamWrite: redact },
    },
    destination,
  );
}
