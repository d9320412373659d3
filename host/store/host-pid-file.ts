/**
 * The running host's pid is written beside the host lock in the data folder, only for messages ("host pid
 * N is not answering"), never as a lock. A leaf of its own so the paths module can name the file without
 * loading the database code.
 */
export const HOST_PID_FILE = 'host.pid';
