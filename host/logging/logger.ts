/** What a log line says besides its message: pino's merge object. */
export type LogDetails = object;

/** One level's call: details first, then the message (pino's form). */
export type LogCall = (details: LogDetails, message: string) => void;

/**
 * The one logging shape of the host. pino's logger is one (`createLogger` makes it and the composition root
 * hands out children); so is a plain object in a test. A part that logs at a few levels takes
 * `Pick<Logger, 'warn' | …>` (`LogLevels` for all four), never a shape of its own. The level and `child`
 * options are here for the platform libraries that take a pino-shaped logger (Baileys). The agent, which may
 * not import host code, keeps its own single copy (container-agent/src/logging/stderr-logger.ts).
 */
export interface Logger {
  readonly level: string;
  isLevelEnabled(level: string): boolean;
  trace: LogCall;
  debug: LogCall;
  info: LogCall;
  warn: LogCall;
  error: LogCall;
  /** A logger whose every line also carries `bindings` (the subsystem, the channel, the run). */
  child(bindings: Record<string, unknown>, options?: { level?: string }): Logger;
}

/** The four levels a subsystem logs at, without levels or children. */
export type LogLevels = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
