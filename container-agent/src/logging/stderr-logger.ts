/**
 * A small JSON-lines logger for the agent. It writes to stderr only: stdout carries JSON-RPC frames.
 * The signature matches pino's (`logger.warn({ details }, 'message')`) so the rpc peer can take either.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface AgentLogger {
  debug(details: object, message: string): void;
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createStderrLogger(
  options: {
    write?: (line: string) => void;
    level?: LogLevel;
    now?: () => Date;
  } = {},
): AgentLogger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const min = ORDER[options.level ?? 'info'];
  const now = options.now ?? (() => new Date());
  const log = (level: LogLevel) => (details: object, message: string) => {
    if (ORDER[level] < min) return;
    let line: string;
    try {
      line = JSON.stringify({ level, time: now().toISOString(), msg: message, ...details });
    } catch {
      line = JSON.stringify({ level, time: now().toISOString(), msg: message });
    }
    write(line + '\n');
  };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}
