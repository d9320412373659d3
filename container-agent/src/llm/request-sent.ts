/**
 * When an LLM request has left the process. Work that must not delay a run's first request (the command
 * executor's start, the bash parser's load) waits for this, not for the call that starts the request:
 * between the two lie the SDK building the request, the connect and the write, all on this process's CPU,
 * and a task started at the call shares it with them. Node's fetch (undici) says on a diagnostics channel
 * when a request's body is written.
 */
import diagnostics from 'node:diagnostics_channel';

const BODY_SENT = 'undici:request:bodySent';

/**
 * Calls `then`, in a macrotask of its own, once the next request made through node's fetch has its body
 * written, or once `settled` settles (a request that failed before it was sent, a fetch of another kind),
 * whichever comes first; once.
 */
export function afterRequestSent(settled: Promise<unknown>, then: () => void): void {
  let called = false;
  const fire = (): void => {
    if (called) return;
    called = true;
    diagnostics.unsubscribe(BODY_SENT, fire);
    // Not inside undici's write, whose caller goes on once the subscribers return.
    setImmediate(then);
  };
  diagnostics.subscribe(BODY_SENT, fire);
  settled.then(fire, fire);
}
