/** The subset of pino the gateway uses. Log objects never contain headers or keys. */
export interface GatewayLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
