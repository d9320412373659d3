import { ConfigError } from '../config/config-error.ts';
import { ApiError, HostNotAnswering, HostUnreachable } from '../channels/local/local-client.ts';
import { CleanRoomError } from '../security/policies/admin-clean-room.ts';
import { HostLockedError } from '../store/host-lock.ts';
import { MigrationError } from '../store/migrate.ts';
import { SocketInUseError } from '../channels/local/socket-server.ts';
import { RestoreRefused } from '../backup/restore-refused.ts';
import { HostStartError } from '../app/start-error.ts';
import { UsageError } from './cli-context.ts';
import { errorMessage } from '../errors/error-message.ts';
import { errorCode } from '../errors/error-code.ts';

/**
 * The exit code and message for an error a command threw, or undefined for one nobody expected (a bug:
 * the caller prints its stack). Loaded only when a command fails, so no command pays for its imports.
 */
export function explainError(err: unknown, usage: string): { code: number; message: string } | undefined {
  // A failed start names its step; whether it is the owner's to fix (exit code, no stack) is its cause's.
  if (err instanceof HostStartError) {
    const cause = explainError(err.cause, usage);
    return cause && { code: cause.code, message: err.message };
  }
  if (err instanceof UsageError || err instanceof CleanRoomError || err instanceof ConfigError)
    return { code: 2, message: err.message };
  if (
    err instanceof HostLockedError ||
    err instanceof RestoreRefused ||
    err instanceof SocketInUseError ||
    err instanceof MigrationError ||
    err instanceof HostUnreachable ||
    err instanceof HostNotAnswering ||
    err instanceof ApiError
  )
    return { code: 1, message: err.message };
  if (errorCode(err)?.startsWith('ERR_PARSE_ARGS'))
    return { code: 2, message: `${errorMessage(err)}\nusage: ${usage}` };
  return undefined;
}
