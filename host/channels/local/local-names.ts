/** The console's channel name; a leaf module, so config and the registry need not load the console. */
export const LOCAL_CHANNEL = 'local';
