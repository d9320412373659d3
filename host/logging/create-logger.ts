import pino, { type DestinationStream } from 'pino';
import { censorKeyPaths } from './censor-key-paths.ts';
import type { Logger } from './logger.ts';

export interface LoggerOptions {
  level: string;
  /** Removes held secrets from a serialized line; applied to every line, whatever field holds the secret. */
  redact: (line: string) => string;
  destination?: DestinationStream;
}

/**
 * Known key paths are censored (`censorKeyPaths`); a secret can also hide inside an error message or a URL,
 * so every serialized line additionally passes through a value-based redactor before it is written.
 */
export function createLogger({ level, redact, destination = pino.destination(2) }: LoggerOptions): Logger {
  return pino(
    {
      level,
      // Not pino's `redact`: with wildcard paths it runs a redacting stringifier on every value of every
      // line (censor-key-paths.ts says why that mattered). The same fields are censored in every line's
      // details, a child's lines too; a child's bindings are not (pino formats them once, without this
      // hook): the host binds only names and ids, and the value redactor below still sees them.
      formatters: { log: censorKeyPaths },
      hooks: { streamWrite: redact },
    },
    destination,
  );
}
