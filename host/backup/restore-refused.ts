/**
 * A restore that did not happen, or was taken back: the message says what was wrong, what to do, and that the
 * data folder is as it was. One line, for the operator; the CLI prints it without a stack.
 */
export class RestoreRefused extends Error {}
