import type { ConfigHandlers } from '../../host/ipc/host-handlers.ts';

/** config.read / config.propose for IPC tests and benches that are not about config: any call fails the test. */
export const refusingConfigHandlers: ConfigHandlers = {
  read: async () => {
    throw new Error('config.read was not expected in this test');
  },
  propose: async () => {
    throw new Error('config.propose was not expected in this test');
  },
};
