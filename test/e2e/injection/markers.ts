/** Words the injection suite plants and looks for, shared with its MCP server (a separate process). */

/** The injected description of the notes server's `read_note` tool carries this. */
export const DESCRIPTION_MARKER = 'INJ-MCP-DESCRIPTION';

/** Every scenario's injected text carries `INJ-<scenario tag>`; the model obeys only what it has read. */
export const injectionMarker = (tag: string): string => `INJ-${tag}`;

/** A member's ask that starts a run of an earlier conversation: the model answers it with nothing. */
export const EARLIER_CONVERSATION = 'EARLIER please file the bill';
