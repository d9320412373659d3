/** The text of anything thrown: an Error's message, or the value itself as a string. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Anything thrown, as an Error: the Error itself, or a new one whose message is the value as a string. */
export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
