import type { Logger } from '../logging/logger.ts';
import {
  agentMethods,
  hostMethods,
  type ChatMessage,
  type HostMethods,
  type RunStartParams,
} from '../../container-agent/src/protocol.ts';
import { createRpcPeer, type ProtocolProblem, type RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import type { ContainerExit, ContainerProcess } from './container-process.ts';
import type { RunHandle, RunOutcome } from '../router/agent-runner.ts';
import type { StoredMessage } from '../store/messages-store.ts';
import { createFrameBudget, DEFAULT_FRAME_BUDGET, type FrameBudgetLimits } from './frame-budget.ts';
import type { RunDone } from './host-handlers.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { errorMessage } from '../errors/error-message.ts';

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
type ImageType = (typeof IMAGE_TYPES)[number];
const isImageType = (mime: string | undefined): mime is ImageType =>
  (IMAGE_TYPES as readonly (string | undefined)[]).includes(mime);

/**
 * A stored message as the agent reads it. `maxImageBytes` (0: the model sees no images) decides whether a
 * stored photo goes along as an image for the model; a larger one, or any for a text-only model, stays the
 * text line the host wrote for it.
 */
export function toChatMessage(m: StoredMessage, maxImageBytes = 0): ChatMessage {
  const media = m.media;
  const image =
    media?.status === 'stored' &&
    media.path !== undefined &&
    isImageType(media.mime) &&
    (media.bytes ?? Infinity) <= maxImageBytes
      ? { image: { path: media.path, mime: media.mime } }
      : {};
  return {
    id: m.id,
    sender: m.senderId,
    senderName: m.senderName,
    text: m.text,
    timestamp: m.sentAt,
    fromAssistant: false,
    ...image,
  };
}

export interface StopOptions {
  /** Kill at once instead of SIGTERM and a grace period. */
  now?: boolean;
}

export interface RunSessionDeps {
  container: ContainerProcess;
  start: RunStartParams;
  /** Photos up to this size go to the model as images with messages forwarded into the run (0: none). */
  maxImageBytes?: number;
  /**
   * Built per run with the run's identity (see createHostHandlers); `run.done` must call `onDone`;
   * `stop` ends the run for a reason of the host's (a gate miss, a quota): not retried, the group is told.
   */
  handlers: (onDone: (done: RunDone) => void, stop: (reason: string) => void) => RpcHandlers<HostMethods>;
  /** Audits one protocol problem; only the first few of a run come here (see frame-budget.ts). */
  onProtocolProblem(problem: ProtocolProblem): void;
  frameBudget?: FrameBudgetLimits;
  /**
   * Watchers started with the run (e.g. disk quotas): each gets the stop-for-cause and returns its
   * disposer, called when the container has exited. `now` kills the container without a grace period
   * (a run over its disk quota would go on writing through it).
   */
  guards?: ReadonlyArray<(stop: (reason: string, options?: StopOptions) => void) => () => void>;
  stopGraceMs: number;
  /** How often a request the host is still working on resets the container's idle timer (default 5 s). */
  keepAliveMs?: number;
  /** The keep-alive's timer (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
  logger: Logger;
}

const DEFAULT_KEEP_ALIVE_MS = 5_000;

/**
 * While the host works on a request (waiting for the owner's approval, a Cop review), the container is
 * silent by design: its idle timer must not run out meanwhile.
 */
function keptAlive(
  handlers: RpcHandlers<HostMethods>,
  container: ContainerProcess,
  keepAliveMs: number,
  clock: Pick<Clock, 'setTimer'>,
): RpcHandlers<HostMethods> {
  const wrapped: Record<string, (params: never, ctx: never) => Promise<unknown>> = {};
  for (const [method, handler] of Object.entries(handlers) as [string, (p: never, c: never) => unknown][]) {
    wrapped[method] = async (params, ctx) => {
      container.touch();
      let cancel = () => undefined as void;
      const touchEvery = () => {
        cancel = clock.setTimer(() => {
          container.touch();
          touchEvery();
        }, keepAliveMs);
      };
      touchEvery();
      try {
        return await handler(params, ctx);
      } finally {
        cancel();
        container.touch();
      }
    };
  }
  return wrapped as unknown as RpcHandlers<HostMethods>;
}

/** Why a run ended, in words for the run record and, when it failed, for the group. */
export function describeExit(exit: ContainerExit, done: RunDone | undefined): RunOutcome {
  if (exit.reason === 'hard_timeout') return { ok: false, reason: 'the run took too long and was stopped' };
  if (exit.reason === 'idle_timeout') return { ok: false, reason: 'the agent went quiet and was stopped' };
  if (exit.reason === 'oom') return { ok: false, reason: 'the agent ran out of memory' };
  if (exit.reason === 'stopped') return { ok: false, reason: `stopped: ${exit.detail ?? 'by the host'}` };
  if (exit.reason === 'error') return { ok: false, reason: `container error: ${exit.detail ?? 'unknown'}` };
  if (done) return describeDone(done);
  return { ok: false, reason: `the agent exited (code ${exit.exitCode ?? 'unknown'}) without finishing` };
}

/** How a run that confirmed its run.done ended. */
function describeDone(done: RunDone): RunOutcome {
  if (done.status === 'ok') return { ok: true, reason: 'completed' };
  return { ok: false, reason: `agent error: ${done.error ?? 'unknown'}` };
}

/** Calls `onConfirmed` once run.done has been answered (the answer is written before it runs). */
function confirmingDone(
  handlers: RpcHandlers<HostMethods>,
  onConfirmed: () => void,
): RpcHandlers<HostMethods> {
  const inner = handlers['run.done'];
  return {
    ...handlers,
    'run.done': async (params, ctx) => {
      const result = await inner(params, ctx);
      setImmediate(onConfirmed);
      return result;
    },
  };
}

/**
 * Speaks the IPC protocol with one agent container over its attached stdio and presents it as a
 * RunHandle. The stream is the identity: the handlers were built for this run before it started.
 */
export function createRunSession({
  container,
  start,
  maxImageBytes = 0,
  handlers,
  onProtocolProblem,
  frameBudget,
  guards = [],
  stopGraceMs,
  keepAliveMs = DEFAULT_KEEP_ALIVE_MS,
  clock = systemClock,
  logger,
}: RunSessionDeps): RunHandle {
  function stopContainer(reason: string, options: StopOptions = {}): void {
    try {
      peer.notify('run.stop', { reason: reason.slice(0, 500) });
    } catch {
      // the stream may already be gone; stopping the container below is what counts
    }
    container.stop(reason, options.now ? 0 : stopGraceMs).catch((err: unknown) => {
      logger.error({ err: errorMessage(err) }, 'could not stop the container');
    });
  }
  let done: RunDone | undefined;
  let confirmDone!: (done: RunDone) => void;
  const confirmed = new Promise<RunDone>((resolve) => (confirmDone = resolve));
  /** Set when the host itself ended the run for cause: the outcome says so and is not retried. */
  let stoppedForCause: string | undefined;
  const budget = createFrameBudget(frameBudget);
  const stopForCause = (reason: string, options: StopOptions = {}): void => {
    if (stoppedForCause !== undefined) return;
    stoppedForCause = reason;
    logger.warn({ reason }, 'stopping the run');
    stopContainer(reason, options);
  };
  const peer = createRpcPeer({
    input: container.stdout,
    output: container.stdin,
    localMethods: hostMethods,
    remoteMethods: agentMethods,
    handlers: confirmingDone(
      keptAlive(
        handlers((d) => {
          done = d;
        }, stopForCause),
        container,
        keepAliveMs,
        clock,
      ),
      () => {
        if (done) confirmDone(done);
      },
    ),
    onProtocolError: (problem) => {
      const step = budget.next();
      if (step === 'audit') {
        logger.warn({ problem }, 'IPC protocol problem');
        onProtocolProblem(problem);
      } else if (step === 'stop') {
        const limit = (frameBudget ?? DEFAULT_FRAME_BUDGET).stopAfter;
        stopForCause(`the agent sent more than ${limit} malformed or unexpected frames`);
        // Nothing more from this stream is read: a flood costs the host nothing from here on.
        peer.close();
      }
    },
    // The peer logs each problem too: only as long as they are audited one by one.
    logger: {
      warn: (details, message) => {
        if (budget.logging()) logger.warn(details, message);
      },
      debug: (details, message) => logger.debug(details, message),
    },
  });
  container.stderr.setEncoding('utf8');
  container.stderr.on('data', (chunk: string) => {
    for (const line of chunk.split('\n'))
      if (line.trim()) logger.debug({ agent: line.slice(0, 2000) }, 'agent log');
  });

  const accepted = peer.request('run.start', start).then(() => undefined);
  // An agent that never takes in its start messages has nothing to do: end it now instead of letting it
  // hold a slot until the idle timeout.
  accepted.catch((err: unknown) => {
    logger.warn({ err: errorMessage(err) }, 'run.start was not accepted; stopping the container');
    container.stop('run.start was not accepted', stopGraceMs).catch(() => undefined);
  });

  const disposers = guards.map((guard) => guard(stopForCause));
  const exited = container.exited.then((exit): RunOutcome => {
    for (const dispose of disposers) dispose();
    peer.close();
    const unaudited = budget.unaudited();
    if (unaudited > 0) {
      onProtocolProblem({
        kind: 'invalid-request',
        message: `${unaudited} more protocol problems in this run (not audited one by one)`,
      });
    }
    if (stoppedForCause !== undefined) return { ok: false, reason: stoppedForCause, retryable: false };
    return describeExit(exit, done);
  });
  // The run is over once its run.done is confirmed: the agent has nothing left to do but exit, so its slot
  // and its key are freed now. With its stdin closed the agent exits by itself at once, its last log lines
  // written; a signal sent now would race them. Only an agent still there after the grace period is
  // killed. Either way the container goes off the critical path.
  const confirmedOutcome = confirmed.then((d) => {
    container.stdin.end();
    void exitsWithin(container, stopGraceMs, clock).then((gone) => {
      if (gone) return;
      container.stop('the run is over and its agent did not exit', 0).catch((err: unknown) => {
        logger.warn({ err: errorMessage(err) }, 'could not stop a finished container');
      });
    });
    if (stoppedForCause !== undefined) return { ok: false, reason: stoppedForCause, retryable: false };
    return describeDone(d);
  });
  const finished = Promise.race([exited, confirmedOutcome]);

  return {
    accepted,
    async input(messages) {
      try {
        const res = await peer.request('run.input', {
          messages: messages.map((m) => toChatMessage(m, maxImageBytes)),
        });
        return res.accepted;
      } catch {
        return false;
      }
    },
    stop: (reason) => stopContainer(reason),
    done: finished,
  };
}

/** Whether the container exits within `ms`. */
function exitsWithin(
  container: ContainerProcess,
  ms: number,
  clock: Pick<Clock, 'setTimer'>,
): Promise<boolean> {
  return new Promise((resolve) => {
    const cancel = clock.setTimer(() => resolve(false), ms);
    void container.exited.then(() => {
      cancel();
      resolve(true);
    });
  });
}
